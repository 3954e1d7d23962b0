package session

import (
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/zklock/internal/wire"
	"github.com/tierlock/tierlock/zklock/internal/writes"
)

// The session as its write path sees it (package writes has the queue and
// the writer; writes.Conn the contract): the connection's state, the
// request on the wire with the lease's proof around it, and the bound on
// requests in flight.

// writeLink is the floor's side of its write path's contract: its methods
// are what writes.Conn asks of the session.
type writeLink struct {
	s *Floor
}

// startWrites makes the floor's write path (Floor.wq) on its connection.
func (s *Floor) startWrites() {
	zc := s.zc
	wl := &writeLink{s: s}
	s.wq = writes.New(writes.Conn{
		Connected: wl.connected,
		SessionID: s.conn.SessionID,
		Send:      wl.send,
		Ended:     wl.ended,
		// A delete the server would not let go: retried alone until its
		// node or its session is gone.
		DeleteApart: func(node string, owner int64) { s.Go(func() { s.DeleteGuaranteed(node, owner) }) },
		Queued:      func(path, node string, owner int64) { trace.DelAdded(zc, path, node, owner) },
		Go:          s.Go,
		Now:         time.Now,
		AfterFunc:   func(d time.Duration, f func()) writes.Timer { return time.AfterFunc(d, f) },
		// The session's own errors, which the write path tells as they
		// are: no mapping of its verdicts to them on this side.
		Closed:          s.ClosedErr,
		GoneWithSession: ErrGoneWithSession,
	}, writeConfig(s.cfg, s.tap, s.link.ownsConn))
}

// writeConfig is the write path's configuration for a session on tap
// (nil: a connection of its owner's, without a chroot). Its requests are
// sized with each path as the server reads it, the chroot the tap puts
// before it included.
func writeConfig(cfg Config, tap *wire.Tap, ownsConn bool) writes.Config {
	fold := foldWait
	if cfg.Hooks != nil && cfg.Hooks.FoldWait > 0 {
		fold = cfg.Hooks.FoldWait
	}
	c := writes.Config{MaxOps: maxBatchOps, MaxBytes: requestLimit(cfg.JuteMax), MaxApart: maxApart,
		FoldWait: fold, OneWrite: cfg.NoPipelining, KeepDeletesOnClose: !ownsConn}
	if tap != nil {
		c.PathLen = tap.PathLen
	}
	return c
}

// The size of a request, its header and body as go-zookeeper encodes
// them, is bounded twice: go-zookeeper v1.0.4 encodes it into a buffer of
// 1.5 MiB after the 4-byte length (bufferSize, conn.go) and fails one that
// does not fit (zk.ErrShortBuffer), unsent; the server drops the
// connection of one over its jute.maxbuffer (0xfffff bytes unless set
// otherwise: NIOServerCnxn's "Len error"), which the client reads as a
// lost connection. A server does not tell its clients its jute.maxbuffer
// (ZooKeeper 3.8 shows it over JMX only): a session takes ZooKeeper's
// default unless WithJuteMaxBuffer says otherwise, as a Java client reads
// the same property. The writer packs each request up to the smaller of
// the two, and a write too large alone is refused before sending.
const (
	clientMaxRequest     = 1536<<10 - 4
	defaultJuteMaxBuffer = 0xfffff
)

// requestLimit is the largest request a session sends: its server's
// jute.maxbuffer (0: the default), within go-zookeeper's buffer.
func requestLimit(jute int) int {
	if jute <= 0 {
		jute = defaultJuteMaxBuffer
	}
	return min(jute, clientMaxRequest)
}

// The bounds of the write path. The writer has one round out at a time,
// and the server answers a session's requests in order, so a batch's round
// trip includes the reads the session queued before it: under many keys,
// each round trip brings as many new writes as acquisitions started
// meanwhile. maxBatchOps lets a batch take them all up to about 500
// acquisitions (a create and a delete each), so that the writer keeps pace
// with the reads around it (4 x 1000 x 1000 ran at 0.82x the rate with 64
// ops and 0.97x with 256, and spent 1.11x the server's CPU per
// acquisition at 64: docs/bench/issue38-batch-bounds.txt). A batch's
// bytes are bounded by requestLimit.
// maxApart bounds the requests (and the goroutines that make them) of a
// round that sends writes apart, each alone, after they were refused
// twice for another write's op: a cold burst of a thousand acquisitions on
// new paths fails in about sixteen round trips rather than one round trip
// of a thousand requests at once.
const (
	maxBatchOps = 1024
	maxApart    = 64
)

// foldWait is how long a released node's delete, queued alone, waits for a
// create of the session to carry it: short beside a hand-off between
// processes (a committed write, an event and a read), long beside the path
// from a release to the releasing goroutine's next create. A test may set
// another (Hooks.FoldWait).
const foldWait = 100 * time.Microsecond

// send makes the requests of a writer's round: the first on the
// writer's goroutine, each other one (a round of writes apart, at most
// maxApart) side by side, through send on a goroutine of its own:
// go-zookeeper's calls block until the answer. A lone create or delete is
// sent as that request (its answer carries what a multi's would, for
// less), anything else as a multi; the results are one per op whenever
// the server evaluated the request. The tap tells the request when it is
// written (the creates' listings go behind it; without a tap, as it is
// handed to the connection), and a success proves the session at the
// leader (the lease, lease.go).
func (wl *writeLink) send(reqs []*writes.Request) []writes.Answer {
	s := wl.s
	answers := make([]writes.Answer, len(reqs))
	var wg sync.WaitGroup
	for i := 1; i < len(reqs); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = wl.send(reqs[i : i+1])[0]
		}()
	}
	defer wg.Wait()
	r := reqs[0]
	op := wire.OpMulti
	create, _ := r.Ops[0].(*zk.CreateRequest)
	del, _ := r.Ops[0].(*zk.DeleteRequest)
	switch {
	case r.Single && create != nil:
		op = wire.OpCreate
	case r.Single && del != nil:
		op = wire.OpDelete
	}
	var wt *wire.Waiter
	if s.tap != nil && !s.cfg.NoPipelining {
		key := writes.OpPath(r.Ops[0])
		wt = s.tap.ExpectFunc(key, r.Written, op)
		defer s.tap.Forget(key, wt)
	}
	p := s.lease.newProof(wt)
	if s.tap != nil {
		s.tap.Handed()
	}
	writeOf := func(i int) (bool, []any) { return r.Writes[i].Kind() == writes.Txn, r.Writes[i].Ops() }
	if trace.Enabled { // a constant: a build without the tag drops both calls
		trace.WritesSent(s.zc, len(r.Writes), writeOf)
	}
	wl.handing(r)
	a := &answers[0]
	switch op {
	case wire.OpCreate:
		node, err := s.conn.Create(create.Path, create.Data, create.Flags, create.Acl)
		*a = answerOf(err, zk.MultiResponse{String: node, Error: err})
	case wire.OpDelete:
		err := s.conn.Delete(del.Path, del.Version)
		*a = answerOf(err, zk.MultiResponse{Error: err})
	default:
		a.Results, a.Err = s.conn.Multi(r.Ops...)
	}
	if trace.Enabled {
		trace.WritesAnswered(s.zc, len(r.Writes), writeOf, a.Results, a.Err)
	}
	if s.tap != nil {
		s.tap.Answered()
	}
	if a.Err == nil {
		s.lease.proved(p)
	}
	return answers
}

// handing tells r's writes it is handed to the connection, where no tap
// tells when it is on the wire (a connection of its owner's): the creates'
// listings go now, behind r in go-zookeeper's send queue unless they
// overtake it, and then miss their node and list again. Waiting for the
// answer cost each acquisition a round trip more than zk.Lock's.
func (wl *writeLink) handing(r *writes.Request) {
	if wl.s.tap != nil || wl.s.cfg.NoPipelining {
		return
	}
	r.Handing()
	if h := wl.s.cfg.Hooks; h != nil && h.Handed != nil {
		h.Handed()
	}
}

// answerOf is a single request's answer as a multi's: one result when the
// server answered (nil, or one of its refusals), none when it may not have.
func answerOf(err error, r zk.MultiResponse) writes.Answer {
	if err != nil && !Refusal(err) {
		return writes.Answer{Err: err}
	}
	return writes.Answer{Results: []zk.MultiResponse{r}, Err: err}
}

// ended gives a create's place in the bound back: answered after rtt
// (the bound adapts to it), or never sent.
func (wl *writeLink) ended(sent bool, rtt time.Duration) {
	if sent {
		wl.s.flight.release(rtt, wl.s.lease.Timeout()/32)
	} else {
		wl.s.flight.GiveBack()
	}
}

// connected waits until the session is connected; false once it is
// closed. It is the writer's wait before each round (a test's gate holds
// it last: Hooks.WriterGate).
func (wl *writeLink) connected() bool {
	s := wl.s
	gated := false
	for {
		s.st.mu.Lock()
		st, changed := s.st.state, s.st.changed
		s.st.mu.Unlock()
		switch {
		case s.Closed() || st == StateClosed:
			return false
		case st == StateConnected && gated:
			return true
		case st == StateConnected:
			gated = true
			if h := s.cfg.Hooks; h != nil && h.WriterGate != nil {
				h.WriterGate(s.life.ctx.Done())
			}
			continue // the state read again: the gate may have held the writer long
		}
		gated = false
		select {
		case <-changed:
		case <-s.life.ctx.Done():
			return false
		}
	}
}
