package writes

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/mutant"
)

// Kind is what a write does.
type Kind uint8

// The kinds of write.
const (
	Create Kind = iota // an acquisition's node
	Delete             // a released or abandoned node
	Txn                // a transaction (a hold's guarded one, or the session's)
)

// stage is where a write is, under Queue.mu.
type stage uint8

const (
	queued stage = iota // in the queue, or back in it after a refused batch
	taken               // in a round being prepared: still withdrawable
	sealed              // in a request handed (or about to be) to the connection
	ended               // settled: Result is written, done closed
)

// Write is one write waiting for the session's writer.
type Write struct {
	kind  Kind
	path  string // the lock path (create, delete); the first op's path (txn)
	ops   []any
	size  int   // what its ops add to a multi, in bytes (sizer.op)
	owner int64 // delete: the session its node was made in
	at    time.Time

	// Sent is closed once the write is on the wire (Request.Written), or
	// once it is over; Done once it is over, its Result then final. A
	// delete has neither: nobody waits for it.
	Sent, Done <-chan struct{}
	// Handed is closed with Sent, or before it, once the write's request
	// is handed to the connection where the session cannot see its wire
	// (Request.Handing): a read sent after it most likely goes out after
	// the write, which only Sent makes sure of. An acquisition's listing
	// goes then, and lists again when it missed its node (createAndList).
	Handed <-chan struct{}
	handed wireMark                 // Handed's
	sent   wireMark                 // Sent's
	done   chan struct{}            // Done's
	wire   atomic.Pointer[wireMark] // the request it is sealed into's: &sent, until sealed again
	res    Result                   // written before done closes, read after

	// told, unless nil, is told a delete's first outcome, once (tell): by
	// the goroutine that has the write (the writer settling or dropping it,
	// or the close), and q.mu orders the hand-overs.
	told func(error)

	// Under Queue.mu.
	stage     stage
	abandoned bool   // its caller gave up once it was sealed: the writer cleans up
	refusals  int    // times its batch was refused at another write's op
	sweep     func() // a create's search for its node by GUID (abandoned)
}

// Kind returns what w does.
func (w *Write) Kind() Kind { return w.kind }

// Ops returns w's ops, in the order they are sent.
func (w *Write) Ops() []any { return w.ops }

// Result returns how w ended; read it after Done is closed. An applied
// create's node is Results[0].String.
func (w *Write) Result() Result { return w.res }

// Queue is a session's writes not yet answered, and its writer: one
// goroutine, running while there is something to send.
type Queue struct {
	c    Conn
	cfg  Config
	size sizer // its writes' sizes, by cfg.PathLen

	mu      sync.Mutex
	queue   []*Write
	running bool           // the writer's goroutine runs (or is started)
	deletes map[string]int // queued deletes, by lock path
	timer   Timer          // wakes the writer when a lone delete's FoldWait is over
	closed  bool
	hurry   bool // Flush: what is queued goes with the next batch, lingering no more
}

// New returns the write path of the session c.
func New(c Conn, cfg Config) *Queue {
	return &Queue{c: c, cfg: cfg, size: sizer{cfg.PathLen}, deletes: make(map[string]int)}
}

// Create queues the create of an acquisition's node, prefix (ephemeral,
// sequential), on the lock at path. Its caller holds a place in the
// session's bound, which Conn.Ended gives back. A create whose request
// alone would be larger than Config.MaxBytes ends at once, TooLarge.
func (q *Queue) Create(path, prefix string, data []byte, acl []zk.ACL) *Write {
	op := &zk.CreateRequest{Path: prefix, Data: data, Acl: acl, Flags: zk.FlagEphemeralSequential}
	w := &Write{kind: Create, path: path, ops: []any{op}, size: q.size.op(op)}
	if mutant.On(mutSizeByEstimate) {
		w.size = len(prefix) + len(data) + 64*len(acl) + 32 // seeded bug: an estimate, not the request's encoded size
	}
	q.add(w)
	return w
}

// Txn queues a transaction, ops in order, to be applied whole or not at
// all. A transaction whose multi would be larger than Config.MaxBytes
// ends at once, TooLarge.
func (q *Queue) Txn(ops []any) *Write {
	size := 0
	for _, op := range ops {
		size += q.size.op(op)
	}
	w := &Write{kind: Txn, path: OpPath(ops[0]), ops: ops, size: size}
	q.add(w)
	return w
}

// Delete queues the delete of node, made in session owner (0: unknown),
// released or abandoned on the lock at path. Nobody waits for it: it is
// retried whatever it meets until the node or its session is gone. told,
// unless nil, is told its first outcome, once, by the goroutine that
// settles it (it must not block): nil (it removed the node); the server's
// zk.ErrNoNode, or Conn.GoneWithSession when its node went with its
// session (dropped unsent, or refused for the node's absence once the
// session is another); a refusal (it goes on, retried alone:
// Conn.DeleteApart); an unknown outcome's error (it goes again, untold);
// or Conn.Closed's error (the session closed with it queued). A batch
// refused at another write's op tells it nothing.
func (q *Queue) Delete(path, node string, owner int64, told func(error)) {
	q.c.Queued(path, node, owner)
	w := q.newDelete(path, node, owner)
	w.told = told
	q.add(w)
}

// Flush sends what is queued with the next batch, now if the writer is
// idle: a lone delete lingers no more (for a caller that waits for its
// outcome and knows no create is coming to carry it).
func (q *Queue) Flush() {
	q.mu.Lock()
	q.hurry = len(q.queue) > 0
	start := q.startLocked(true)
	q.mu.Unlock()
	if start {
		q.c.Go(q.run)
	}
}

func (q *Queue) newDelete(path, node string, owner int64) *Write {
	op := &zk.DeleteRequest{Path: node, Version: -1}
	return &Write{kind: Delete, path: path, owner: owner, ops: []any{op}, size: q.size.op(op)}
}

func (q *Queue) add(w *Write) {
	w.at = q.c.Now()
	if w.kind != Delete {
		w.sent.ch, w.handed.ch, w.done = make(chan struct{}), make(chan struct{}), make(chan struct{})
		w.Sent, w.Handed, w.Done = w.sent.ch, w.handed.ch, w.done
		w.wire.Store(&w.sent)
		if err := q.size.tooLarge(w, q.cfg.MaxBytes); err != nil {
			w.res, w.stage = Result{Verdict: TooLarge, Err: err}, ended
			q.drop(w, nil) // never sent
			return
		}
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		closedErr := q.c.Closed()
		q.mu.Lock()
		endClosedLocked(w, closedErr) // nobody else has w yet
		q.mu.Unlock()
		q.drop(w, closedErr)
		return
	}
	q.queue = append(q.queue, w)
	if w.kind == Delete {
		q.deletes[w.path]++
	}
	start := q.startLocked(w.kind != Delete)
	q.mu.Unlock()
	if start {
		q.c.Go(q.run)
	}
}

// startLocked reports whether the writer must be started: it is not
// running, and either now is true or the queue's lone deletes have waited
// their FoldWait (else the timer is armed for it). q.mu is held.
func (q *Queue) startLocked(now bool) bool {
	if q.running || q.closed || len(q.queue) == 0 {
		return false
	}
	if wait := q.lingerLocked(); !now && wait > 0 {
		if q.timer == nil {
			q.timer = q.c.AfterFunc(wait, q.wake)
		} else {
			q.timer.Reset(wait)
		}
		return false
	}
	q.running = true
	return true
}

// lingerLocked is how much longer the queue must wait before it is sent:
// while it holds deletes only, until the oldest has waited FoldWait.
func (q *Queue) lingerLocked() time.Duration {
	if q.hurry {
		return 0
	}
	for _, w := range q.queue {
		if w.kind != Delete {
			return 0
		}
	}
	return q.cfg.FoldWait - q.c.Now().Sub(q.queue[0].at)
}

// wake is the timer's: a lone delete has waited long enough.
func (q *Queue) wake() {
	q.mu.Lock()
	start := q.startLocked(false)
	q.mu.Unlock()
	if start {
		q.c.Go(q.run)
	}
}

// takeLocked takes the next round from the head of the queue: one batch
// of whole writes within the bounds, or, when the head's writes were
// refused twice for another's op, writes apart (takeApartLocked); nil
// when there is nothing to send yet. q.mu is held.
func (q *Queue) takeLocked() [][]*Write {
	if len(q.queue) == 0 || q.lingerLocked() > 0 {
		return nil
	}
	apart := apartAfter
	if mutant.On(mutant.ApartStops) {
		apart = 1 // seeded bug: the code before the fifth review went apart at once
	}
	if q.queue[0].refusals >= apart {
		return q.takeApartLocked(apart)
	}
	q.hurry = false // what Flush found queued goes now
	ops, size, n := 0, 0, 0
	for n < len(q.queue) {
		w := q.queue[n]
		if n > 0 && (ops+len(w.ops) > q.cfg.MaxOps || headerSize+size+w.size+opHeaderSize > q.cfg.MaxBytes || q.cfg.OneWrite || w.refusals >= apart) {
			break
		}
		ops, size, n = ops+len(w.ops), size+w.size, n+1
	}
	batch := make([]*Write, n)
	copy(batch, q.queue)
	rest := q.queue[n:]
	if mutant.On(mutant.CreateBeforeDelete) {
		batch, rest = createsAhead(batch, rest) // seeded bug
	}
	q.queue = append(q.queue[:0], rest...)
	q.takenLocked(batch)
	return [][]*Write{batch}
}

// apartAfter is how many refusals for another write's op send a write
// apart. A refused batch's other writes first go again together: one
// failing write in a batch (a stale transaction, a delete of a node gone)
// is the common case, and costs one round trip more. Refused again, they
// go apart, each alone: a multi answer names only its first failing op,
// so a batch of many failing writes (a burst of creates on new lock
// paths, whose parents are missing) would fail one round trip after
// another.
const apartAfter = 2

// takeApartLocked takes, from the writes at the head of the queue that go
// apart, at most one per path (so that each path's writes keep the
// queue's order: requests side by side are applied in any order) and at
// most MaxApart, each to be sent alone. A path skipped keeps its later
// writes in the queue too. q.mu is held.
func (q *Queue) takeApartLocked(apart int) [][]*Write {
	if mutant.On(mutant.ApartStops) {
		return q.takeApartStopping() // seeded bug
	}
	seen := make(map[string]bool)
	var round [][]*Write
	kept := q.queue[:0]
	i := 0
	for ; i < len(q.queue) && q.queue[i].refusals >= apart; i++ {
		w := q.queue[i]
		if seen[w.path] || len(round) == q.cfg.MaxApart {
			seen[w.path] = true
			kept = append(kept, w)
			continue
		}
		seen[w.path] = true
		round = append(round, []*Write{w})
	}
	q.queue = append(kept, q.queue[i:]...)
	for _, b := range round {
		q.takenLocked(b)
	}
	return round
}

// takenLocked marks the writes of a batch taken. q.mu is held.
func (q *Queue) takenLocked(batch []*Write) {
	for _, w := range batch {
		w.stage = taken
		if w.kind == Delete {
			if q.deletes[w.path]--; q.deletes[w.path] == 0 {
				delete(q.deletes, w.path)
			}
		}
	}
}

// finish closes w's channels: it is over.
func (w *Write) finish() {
	w.onWire()
	if w.done != nil {
		close(w.done)
	}
}

// bounded reports whether w holds a place in the session's bound on
// requests in flight, which Conn.Ended gives back: a create does.
func (w *Write) bounded() bool { return w.kind == Create }

// tell tells a delete's told its first outcome, once.
func (w *Write) tell(err error) {
	if told := w.told; told != nil {
		w.told = nil
		told(err)
	}
}

// OpPath returns the path an op of a request names (a create's, a
// delete's, a set's or a check's), "" for anything else.
func OpPath(op any) string {
	switch o := op.(type) {
	case *zk.CreateRequest:
		return o.Path
	case *zk.SetDataRequest:
		return o.Path
	case *zk.DeleteRequest:
		return o.Path
	case *zk.CheckVersionRequest:
		return o.Path
	}
	return ""
}
