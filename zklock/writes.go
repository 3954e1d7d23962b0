package zklock

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/mutant"
	"github.com/tierlock/tierlock/internal/trace"
)

// The session's write path: every write its locks have waiting (the
// creates of their nodes, on any path; the deletes of released nodes; the
// holds' guarded transactions) leaves in one multi transaction, which the
// server applies as one proposal, one log append and one commit. A writer
// goroutine sends one batch at a time and, while it is out, the next one
// gathers: a quiet session sends each write as it comes (a create is never
// held back), a busy one sends few large multis, one round trip apart.
//
// The order of the queue is the order of the writes on the wire, and so at
// the server (ZooKeeper applies one session's requests in the order they
// arrive, a multi's ops in order): a create queued after its path's
// released node's delete goes in the same multi after it, or in a later
// one, so that the session never has two nodes queued on a path
// (model/writes.pml). A lone delete lingers foldWait before it is sent,
// so that the releasing goroutine's next create, on any path, carries it.
//
// One failing op fails a whole multi at the server. The failing op is the
// first with an error in the answer (the ops before it report OK, those
// after it a runtime inconsistency): its write alone fails, with what it
// would have met on its own, and the others go again at the head of the
// queue, each alone and side by side (takeApartLocked), so that many
// failing writes (a burst on new paths) fail in one round trip. An answer
// that does not say (the connection lost with the multi out) leaves every
// write's outcome unknown: a create is looked for by its GUID (protection
// mode, enqueueAgain), a delete goes again at the head of the queue until
// its node or its session is gone, a transaction reports
// ErrOutcomeUnknown. settle.go has what an answer means, writer.go the
// writer's goroutine and its send.

// The bounds of one batch. The writer has one batch out at a time, and the
// server answers a session's requests in order, so a batch's round trip
// includes the reads the session queued before it: under many keys, each
// round trip brings as many new writes as acquisitions started meanwhile.
// maxBatchOps lets a batch take them all up to about 500 acquisitions
// (a create and a delete each), so that the writer keeps pace with the
// reads around it (4 x 1000 x 1000 ran at 0.82x the rate with 64 ops and
// 0.97x with 256, and spent 1.11x the server's CPU per acquisition at 64:
// docs/bench/issue38-batch-bounds.txt); and one op that fails sends the
// rest again, which the rarity of failures (a missing parent once per
// path, a refusal) makes cheap. maxBatchBytes stays well below the
// server's jute.maxbuffer (1 MiB by default), which drops the connection
// of a larger request; a node's data is at most maxDataLen (64 KiB), so a
// batch always has room for one write.
const (
	maxBatchOps   = 1024
	maxBatchBytes = 512 << 10
)

// foldWait is how long a released node's delete, queued alone, waits for a
// create of the session to carry it: short beside a hand-off between
// processes (a committed write, an event and a read), long beside the path
// from a release to the releasing goroutine's next create.
const foldWait = 100 * time.Microsecond

type writeKind uint8

const (
	writeCreate writeKind = iota
	writeDelete
	writeTxn
)

// testWriterGate, when a test sets it, holds every session's writer before
// each batch until the channel closes (HoldWriterForTest).
var testWriterGate atomic.Pointer[chan struct{}]

// write is one write waiting for the session's writer.
type write struct {
	kind     writeKind
	path     string // the lock path (create, delete); the hold's node (txn)
	ops      []any  // what it adds to the multi: one op, or a transaction's
	size     int    // about what its ops add to the request, in bytes
	owner    int64  // delete: the session its node was made in
	at       time.Time
	admitted bool // a place in the bound on requests in flight, given back once answered

	// sent is closed once the write is on the wire (under Connect: the
	// tap saw the request written), or once it is over; done once it is
	// over. A delete has neither: nobody waits for it, but a hold's delete
	// may have then (see deleteThen).
	sent  chan struct{}
	wired atomic.Bool // sent is closed
	done  chan struct{}
	// Written before done closes, read after: its ops' results (as it
	// would have had them alone), its error, and the session it was
	// answered in (a create's node's owner).
	res []zk.MultiResponse
	err error
	sid int64

	// then, when not nil, is told a delete's first outcome, once (told);
	// only the goroutine that has the write (the writer, or whoever ends
	// it) calls it, and the queue's mutex orders the hand-overs.
	then func(error)

	// Under writeQueue.mu: taken, in a batch (no longer withdrawn); ended,
	// settled by the writer; abandoned, its caller gave up once it was
	// taken (the writer cleans up after it, calling sweep for a create of
	// unknown outcome); alone, back from a refused batch, to be sent alone.
	taken, ended, abandoned, alone bool
	sweep                          func()
}

// writeQueue is the session's writes not yet answered, and its writer.
type writeQueue struct {
	s       *Session
	mu      sync.Mutex
	queue   []*write
	running bool           // the writer's goroutine runs
	deletes map[string]int // queued deletes, by lock path
	timer   *time.Timer    // wakes the writer when a lone delete's foldWait is over
	closed  bool
	hurry   bool // Flush: what is queued goes with the next batch, lingering no more
}

func (q *writeQueue) init(s *Session) {
	q.s = s
	q.deletes = make(map[string]int)
}

// create queues the create of our node, prefix (ephemeral, sequential), on
// the lock at path; admitted: the caller holds a place in the bound.
func (q *writeQueue) create(path, prefix string, data []byte, acl []zk.ACL) *write {
	w := &write{kind: writeCreate, path: path, admitted: true,
		ops:  []any{&zk.CreateRequest{Path: prefix, Data: data, Acl: acl, Flags: zk.FlagEphemeralSequential}},
		size: len(prefix) + len(data) + 64*len(acl) + 32}
	q.add(w)
	return w
}

// txn queues a guarded transaction (its check first) on the hold's node.
func (q *writeQueue) txn(node string, ops []any) *write {
	size := 0
	for _, op := range ops {
		size += opSize(op)
	}
	w := &write{kind: writeTxn, path: node, ops: ops, size: size}
	q.add(w)
	return w
}

// delete queues the delete of node, made by session owner, released or
// abandoned on the lock at path. Nobody waits for it: it is guaranteed,
// retried whatever it meets until the node or its session is gone.
func (q *writeQueue) delete(path, node string, owner int64) { q.deleteThen(path, node, owner, nil) }

// deleteThen is delete, with then (nil: none) told the delete's first
// outcome, once, by the goroutine that settles it (it must not block): nil
// (it removed the node); the server's zk.ErrNoNode, or errGoneWithSession
// when dropMoot drops it; a refusal (retried in the background); an
// unknown outcome's error (it goes again, untold); or the session's end
// (abandonWrite). WithDeleteHandler's doc says what each means to a hold.
func (q *writeQueue) deleteThen(path, node string, owner int64, then func(error)) {
	trace.DelAdded(q.s.conn, path, node, owner)
	w := newDelete(path, node, owner)
	w.then = then
	q.add(w)
}

func newDelete(path, node string, owner int64) *write {
	return &write{kind: writeDelete, path: path, owner: owner, ops: []any{&zk.DeleteRequest{Path: node, Version: -1}}, size: len(node) + 16}
}

func (q *writeQueue) add(w *write) {
	w.at = time.Now()
	if w.kind != writeDelete {
		w.sent, w.done = make(chan struct{}), make(chan struct{})
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		q.s.abandonWrite(w)
		return
	}
	q.queue = append(q.queue, w)
	if w.kind == writeDelete {
		q.deletes[w.path]++
	}
	start := q.startLocked(w.kind != writeDelete)
	q.mu.Unlock()
	if start {
		q.s.goBackground(q.run)
	}
}

// startLocked reports whether the writer must be started: it is not
// running, and either now is true or the queue's lone deletes have waited
// their foldWait (else the timer is armed for it). q.mu is held.
func (q *writeQueue) startLocked(now bool) bool {
	if q.running || q.closed || len(q.queue) == 0 {
		return false
	}
	if wait := q.lingerLocked(); !now && wait > 0 {
		if q.timer == nil {
			q.timer = time.AfterFunc(wait, q.wake)
		} else {
			q.timer.Reset(wait)
		}
		return false
	}
	q.running = true
	return true
}

// lingerLocked is how much longer the queue must wait before it is sent:
// while it holds deletes only, until the oldest has waited foldWait.
func (q *writeQueue) lingerLocked() time.Duration {
	if q.hurry {
		return 0
	}
	for _, w := range q.queue {
		if w.kind != writeDelete {
			return 0
		}
	}
	return foldWait - time.Since(q.queue[0].at)
}

// wake is the timer's: a lone delete has waited long enough.
func (q *writeQueue) wake() {
	q.mu.Lock()
	start := q.startLocked(false)
	q.mu.Unlock()
	if start {
		q.s.goBackground(q.run)
	}
}

// withdraw takes w out of the queue if no batch has taken it: its caller
// gave up before it was sent, and nothing was written.
func (q *writeQueue) withdraw(w *write) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return !w.taken && q.removeLocked(w)
}

// removeLocked takes w out of the queue; false if it is not there.
func (q *writeQueue) removeLocked(w *write) bool {
	for i, x := range q.queue {
		if x == w {
			q.queue = append(q.queue[:i], q.queue[i+1:]...)
			return true
		}
	}
	return false
}

// deleteQueued reports whether a delete of a node on path waits in the
// queue (TryAcquire, disconnected, does not queue behind it).
func (q *writeQueue) deleteQueued(path string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.deletes[path] > 0
}

// takeLocked takes the next batch from the head of the queue, within the
// bounds, or nil when there is nothing to send yet. q.mu is held.
func (q *writeQueue) takeLocked() (batch []*write, apart bool) {
	if len(q.queue) == 0 || q.lingerLocked() > 0 {
		return nil, false
	}
	if q.queue[0].alone {
		return q.takeApartLocked(), true
	}
	q.hurry = false // what Flush found queued goes now
	ops, size, n := 0, 0, 0
	for n < len(q.queue) {
		w := q.queue[n]
		if n > 0 && (ops+len(w.ops) > maxBatchOps || size+w.size > maxBatchBytes || q.s.cfg.noPipelining) {
			break // WithoutPipelining, the baseline: one write per request
		}
		if w.alone {
			break // what follows a refused batch goes apart (takeApartLocked)
		}
		ops, size, n = ops+len(w.ops), size+w.size, n+1
	}
	batch = make([]*write, n)
	copy(batch, q.queue)
	rest := q.queue[n:]
	if mutant.On(mutant.CreateBeforeDelete) {
		batch, rest = createsAhead(batch, rest) // seeded bug
	}
	q.queue = append(q.queue[:0], rest...)
	q.takenLocked(batch)
	return batch, false
}

// takeApartLocked takes the writes sent again after a refused batch, from
// the head, to be sent each alone and side by side: one multi answer
// names only the first failing op, so a batch of many that fail (a burst
// on new lock paths, whose parents are missing) would fail one multi per
// write, one round trip after another. It stops before a second write on
// one path, so that the queue's order holds on each path. q.mu is held.
func (q *writeQueue) takeApartLocked() []*write {
	paths := make(map[string]bool)
	n := 0
	for n < len(q.queue) && n < maxBatchOps {
		w := q.queue[n]
		if !w.alone || paths[w.path] {
			break
		}
		paths[w.path] = true
		w.alone = false
		n++
	}
	batch := make([]*write, n)
	copy(batch, q.queue)
	q.queue = append(q.queue[:0], q.queue[n:]...)
	q.takenLocked(batch)
	return batch
}

// takenLocked marks the writes of a batch taken. q.mu is held.
func (q *writeQueue) takenLocked(batch []*write) {
	for _, w := range batch {
		w.taken = true
		if w.kind == writeDelete {
			if q.deletes[w.path]--; q.deletes[w.path] == 0 {
				delete(q.deletes, w.path)
			}
		}
	}
}

// createsAhead is the create-before-delete bug: a batch with a create
// leaves its deletes queued for the next one, so that a create goes out
// while its path's released node's delete is still waiting.
func createsAhead(batch, rest []*write) (taken, left []*write) {
	var dels []*write
	for _, w := range batch {
		if w.kind == writeDelete {
			dels = append(dels, w)
		} else {
			taken = append(taken, w)
		}
	}
	if len(taken) == 0 {
		return batch, rest
	}
	return taken, append(dels, rest...)
}

// finish closes w's channels: it is over.
func (w *write) finish() {
	w.onWire()
	if w.done != nil {
		close(w.done)
	}
}

// told tells a delete's then its first outcome, once.
func (w *write) told(err error) {
	if then := w.then; then != nil {
		w.then = nil
		then(err)
	}
}

// onWire closes w.sent, once.
func (w *write) onWire() {
	if w.sent != nil && w.wired.CompareAndSwap(false, true) {
		close(w.sent)
	}
}

// node returns the node a create made.
func (w *write) node() string {
	if len(w.res) == 0 {
		return ""
	}
	return w.res[0].String
}

// opSize is about what op adds to a multi request, in bytes.
func opSize(op any) int {
	switch o := op.(type) {
	case *zk.CreateRequest:
		return len(o.Path) + len(o.Data) + 64*len(o.Acl) + 32
	case *zk.SetDataRequest:
		return len(o.Path) + len(o.Data) + 32
	}
	return len(opPath(op)) + 16
}
