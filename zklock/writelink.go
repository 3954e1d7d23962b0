package zklock

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/zklock/internal/wire"
	"github.com/tierlock/tierlock/zklock/internal/writes"
)

// The session as its write path sees it (package writes has the queue and
// the writer): the connection's state, the request on the wire with the
// lease's proof around it, and the bound on requests in flight.

// writeLink is the session's writes.Conn.
type writeLink struct{ s *Session }

// writeConfig is the write path's configuration for a session.
func writeConfig(cfg sessionConfig, ownsConn bool) writes.Config {
	return writes.Config{MaxOps: maxBatchOps, MaxBytes: maxBatchBytes, MaxApart: maxApart, FoldWait: foldWait,
		OneWrite: cfg.noPipelining, KeepDeletesOnClose: !ownsConn}
}

// The bounds of the write path. The writer has one round out at a time,
// and the server answers a session's requests in order, so a batch's round
// trip includes the reads the session queued before it: under many keys,
// each round trip brings as many new writes as acquisitions started
// meanwhile. maxBatchOps lets a batch take them all up to about 500
// acquisitions (a create and a delete each), so that the writer keeps pace
// with the reads around it (4 x 1000 x 1000 ran at 0.82x the rate with 64
// ops and 0.97x with 256, and spent 1.11x the server's CPU per
// acquisition at 64: docs/bench/issue38-batch-bounds.txt). maxBatchBytes
// stays well below the server's jute.maxbuffer (1 MiB by default), which
// drops the connection of a larger request; a node's data is at most
// maxDataLen (64 KiB), so a batch always has room for one write.
// maxApart bounds the requests (and the goroutines that make them) of a
// round that sends writes apart, each alone, after they were refused
// twice for another write's op: a cold burst of a thousand acquisitions on
// new paths fails in about sixteen round trips rather than one round trip
// of a thousand requests at once.
const (
	maxBatchOps   = 1024
	maxBatchBytes = 512 << 10
	maxApart      = 64
)

// foldWait is how long a released node's delete, queued alone, waits for a
// create of the session to carry it: short beside a hand-off between
// processes (a committed write, an event and a read), long beside the path
// from a release to the releasing goroutine's next create.
const foldWait = 100 * time.Microsecond

// testWriterGate, when a test sets it, holds every session's writer before
// each round until the channel closes (HoldWriterForTest).
var testWriterGate atomic.Pointer[chan struct{}]

// Connected waits until the session is connected; false once it is
// closed. A test's gate holds it first.
func (l writeLink) Connected() bool {
	if gate := testWriterGate.Load(); gate != nil {
		select {
		case <-*gate:
		case <-l.s.life.ctx.Done():
		}
	}
	return l.s.awaitConnected()
}

// SessionID is the connection's current session.
func (l writeLink) SessionID() int64 { return l.s.conn.SessionID() }

// Lead lets the lease's sync go first after a quiet spell (renew.go).
func (l writeLink) Lead() { l.s.lead() }

// Send makes each request, the first on the writer's goroutine and the
// others (a round of writes apart, at most maxApart) side by side on
// goroutines of their own: go-zookeeper's calls block until the answer.
func (l writeLink) Send(reqs []*writes.Request) []writes.Answer {
	answers := make([]writes.Answer, len(reqs))
	var wg sync.WaitGroup
	for i := 1; i < len(reqs); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = l.send(reqs[i])
		}()
	}
	answers[0] = l.send(reqs[0])
	wg.Wait()
	return answers
}

// send makes r: the tap tells r when it is written (the creates' listings
// go behind it), and a success proves the session at the leader (the
// lease, lease.go).
func (l writeLink) send(r *writes.Request) writes.Answer {
	s := l.s
	if s.tap != nil && !s.cfg.noPipelining {
		key := writes.OpPath(r.Ops[0])
		wt := s.tap.ExpectFunc(key, r.Written, requestOpcode(r))
		defer s.tap.Forget(key, wt)
	}
	p := s.newProof()
	if s.tap != nil {
		s.tap.Handed()
	}
	writeOf := func(i int) (bool, []any) { return r.Writes[i].Kind() == writes.Txn, r.Writes[i].Ops() }
	if trace.Enabled { // guarded: the closure would stay in a build without the tag
		trace.WritesSent(s.conn, len(r.Writes), writeOf)
	}
	a := l.do(r)
	if trace.Enabled {
		trace.WritesAnswered(s.conn, len(r.Writes), writeOf, a.Results, a.Err)
	}
	if s.tap != nil {
		s.tap.Answered()
	}
	if a.Err == nil {
		s.proved(p)
	}
	return a
}

// do makes the request: a plain create or delete when it is alone (its
// answer carries what a multi's would, for less), else a multi. The
// results are one per op whenever the server evaluated the request.
func (l writeLink) do(r *writes.Request) writes.Answer {
	conn := l.s.conn
	if !r.Single {
		res, err := conn.Multi(r.Ops...)
		return writes.Answer{Results: res, Err: err}
	}
	switch o := r.Ops[0].(type) {
	case *zk.CreateRequest:
		node, err := conn.Create(o.Path, o.Data, o.Flags, o.Acl)
		return answerOf(err, zk.MultiResponse{String: node, Error: err})
	case *zk.DeleteRequest:
		err := conn.Delete(o.Path, o.Version)
		return answerOf(err, zk.MultiResponse{Error: err})
	}
	res, err := conn.Multi(r.Ops...)
	return writes.Answer{Results: res, Err: err}
}

// answerOf is a single request's answer as a multi's: one result when the
// server answered (nil, or one of its refusals), none when it may not have.
func answerOf(err error, r zk.MultiResponse) writes.Answer {
	if err != nil && !refusal(err) {
		return writes.Answer{Err: err}
	}
	return writes.Answer{Results: []zk.MultiResponse{r}, Err: err}
}

// requestOpcode is the opcode r is written with, by which the tap knows it.
func requestOpcode(r *writes.Request) int32 {
	if !r.Single {
		return wire.OpMulti
	}
	if _, ok := r.Ops[0].(*zk.DeleteRequest); ok {
		return wire.OpDelete
	}
	return wire.OpCreate
}

// Ended gives a create's place in the bound back: answered after rtt (the
// bound adapts to it), or never sent.
func (l writeLink) Ended(sent bool, rtt time.Duration) {
	if sent {
		l.s.flight.release(rtt, l.s.st.lease.bound()/8)
	} else {
		l.s.flight.giveBack()
	}
}

// DeleteApart retries a delete alone until its node or session is gone.
func (l writeLink) DeleteApart(node string, owner int64) { l.s.deleteInBackground(node, owner) }

// Queued records a delete queued.
func (l writeLink) Queued(path, node string, owner int64) {
	trace.DelAdded(l.s.conn, path, node, owner)
}

// Go runs fn on a goroutine the session tracks (Close waits for it).
func (l writeLink) Go(fn func()) { l.s.goBackground(fn) }

// Now is the wall clock's monotonic reading.
func (l writeLink) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (l writeLink) AfterFunc(d time.Duration, f func()) writes.Timer { return time.AfterFunc(d, f) }

// awaitConnected waits until the session is connected; false once it is
// closed.
func (s *Session) awaitConnected() bool {
	for {
		s.st.mu.Lock()
		st, changed := s.st.state, s.st.changed
		s.st.mu.Unlock()
		switch {
		case s.isClosed() || st == StateClosed:
			return false
		case st == StateConnected:
			return true
		}
		select {
		case <-changed:
		case <-s.life.ctx.Done():
			return false
		}
	}
}
