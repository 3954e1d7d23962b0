package zklock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// What the session's locks send, and how:
//
//   - every request of theirs is admitted under a bound on the session's
//     requests in flight (inflight), so that a burst (a thousand goroutines
//     queueing at once) waits in the process rather than in the server's
//     queue, where it would hold up every later request of the session
//     past the lease;
//   - every write of theirs that succeeds renews the lease (lease.go);
//   - a release's delete waits for the session's next create, on any path,
//     and goes out in that create's multi transaction (one log write on the
//     server instead of two); one the next create does not take within a
//     short wait (foldWait) is sent by the flusher its timer starts,
//     with every other such delete in one multi.
//
// go-zookeeper's calls block until the reply and cannot be withdrawn, so
// an acquisition's request runs on a goroutine of the session's for its
// round trip while the caller waits for it or for its ctx (call), and a
// request that must go out before its predecessor's reply (the listing
// behind a create) is sent once the predecessor is on the wire
// (pipelined). Between requests, while it waits for its watch, an
// acquisition has no goroutine but the caller's.

// inflight bounds the requests in flight, adapting the bound to the round
// trip it measures: cut by a quarter (at most once per round trip) when a
// request took longer than the target, raised by one when one came back
// fast while the bound was reached. The target is an eighth of the lease's
// bound, so that a request of the session, and the lease's sync behind it,
// returns well within the lease.
type inflight struct {
	mu    sync.Mutex
	n     int // admitted and not yet released
	limit int
	queue []waitingFlight // in order
	cutAt time.Time       // when limit was last cut
}

const (
	minInflight   = 16
	startInflight = 256
	maxInflight   = 2048 // well below the tap's ring: see wireTap
)

// acquire admits k requests (1 or 2), waiting in order behind earlier
// ones, until ctx ends or quit closes.
func (f *inflight) acquire(ctx context.Context, k int, quit <-chan struct{}) error {
	f.mu.Lock()
	if f.limit == 0 {
		f.limit = startInflight
	}
	if f.n+k <= f.limit && len(f.queue) == 0 {
		f.n += k
		f.mu.Unlock()
		return nil
	}
	ready := make(chan struct{})
	f.queue = append(f.queue, waitingFlight{k, ready})
	f.mu.Unlock()
	var err error
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-quit:
		err = ErrSessionClosed
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-ready:
		// Admitted as we gave up (the close happened under mu, before we
		// took it): hand the places on.
		f.n -= k
		f.wakeLocked()
	default:
		for i, w := range f.queue {
			if w.ready == ready {
				f.queue = append(f.queue[:i], f.queue[i+1:]...)
				break
			}
		}
		f.wakeLocked() // a pair leaving the head may let a single go
	}
	return err
}

// giveBack returns a place admitted but not used.
func (f *inflight) giveBack() {
	f.mu.Lock()
	f.n--
	f.wakeLocked()
	f.mu.Unlock()
}

// release ends one request that took rtt, against the target round trip.
func (f *inflight) release(rtt, target time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	saturated := f.n >= f.limit
	f.n--
	switch {
	case rtt > target && time.Since(f.cutAt) > rtt:
		f.limit = max(minInflight, f.limit*3/4)
		f.cutAt = time.Now()
	case rtt <= target/2 && saturated:
		f.limit = min(maxInflight, f.limit+1)
	}
	f.wakeLocked()
}

func (f *inflight) wakeLocked() {
	for len(f.queue) > 0 && f.n+f.queue[0].k <= f.limit {
		w := f.queue[0]
		f.queue[0] = waitingFlight{}
		f.queue = f.queue[1:]
		f.n += w.k
		close(w.ready)
	}
}

// waitingFlight is an acquire waiting for k places.
type waitingFlight struct {
	k     int
	ready chan struct{} // closed, under mu, when admitted
}

// do runs req, one request of the session's locks, once the bound admits
// it; when it is a write and succeeds, it renews the lease.
func (s *Session) do(ctx context.Context, write bool, req func() error) error {
	if err := s.flight.acquire(ctx, 1, s.ctx.Done()); err != nil {
		return err
	}
	return s.run(true, write, req)
}

// run runs req; admitted, it gives its place in the bound back after.
func (s *Session) run(admitted, write bool, req func() error) error {
	p := proof{queued: time.Now()}
	if write {
		p = s.newProof()
	}
	if s.tap != nil {
		s.tap.out.Add(1)
	}
	err := req()
	if s.tap != nil {
		s.tap.out.Add(-1)
	}
	if admitted {
		s.flight.release(time.Since(p.queued), s.lease.bound()/8)
	}
	if write && err == nil {
		s.proved(p)
	}
	return err
}

// call is do with req on a goroutine of the session's, while the caller
// waits for it or for ctx: go-zookeeper cannot withdraw a request once
// queued, so a caller that must honour its ctx (an acquisition, whose
// request can sit behind a stalled socket) leaves it to finish in the
// background. The caller waits for admission itself, so a request waiting
// for a place has no goroutine of its own. req must write its results only
// into variables the caller reads after a nil return.
func (s *Session) call(ctx context.Context, write bool, req func() error) error {
	if err := s.flight.acquire(ctx, 1, s.ctx.Done()); err != nil {
		return err
	}
	return s.await(ctx, s.launch(true, write, req))
}

// call is a request running on a goroutine of the session's.
type call struct {
	fin chan struct{} // closed once err is written
	err error
}

// launch runs req on a goroutine of the session's: admitted already
// (admitted), or exempt from the bound.
func (s *Session) launch(admitted, write bool, req func() error) *call {
	c := &call{fin: make(chan struct{})}
	s.goBackground(func() {
		c.err = s.run(admitted, write, req)
		close(c.fin)
	})
	return c
}

// await waits for c, or for ctx.
func (s *Session) await(ctx context.Context, c *call) error {
	select {
	case <-c.fin:
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pipelined launches req (one request whose first path is key, with one
// of opcodes), and returns once it is on the wire (the tap saw it written:
// a request queued after that is written after it), once it completed, or
// once ctx ended. Without a tap (NewSession) or under WithoutPipelining it
// returns once req completed or ctx ended.
func (s *Session) pipelined(ctx context.Context, key string, admitted, write bool, req func() error, opcodes ...int32) *call {
	var sent <-chan struct{}
	if s.tap != nil && !s.cfg.noPipelining {
		w := s.tap.expect(key, opcodes...)
		defer s.tap.forget(key, w)
		sent = w.sent
	}
	c := s.launch(admitted, write, req)
	select {
	case <-sent:
	case <-c.fin:
	case <-ctx.Done():
	}
	return c
}

// create sends our node's create (carrying stale's delete) and reports the
// node, its owner and whether stale's node is gone. A create answered
// while the session changed (a pause past the session's life, say) fails
// with errSessionChanged: the node may be the old session's, gone with it,
// and the listing behind it from before. Its outcome is unknown, and
// protection mode reads its true owner from the node.
func (l *Lock) create(prefix string, stale *pendingDelete) (node string, owner int64, dropped bool, err error) {
	s := l.s
	before := s.conn.SessionID()
	node, dropped, err = s.createNode(prefix, l.data, l.acl, stale)
	if hook := testHookCreated.Load(); hook != nil {
		(*hook)()
	}
	owner = s.conn.SessionID()
	if err == nil && owner != before {
		err = errSessionChanged
	}
	return node, owner, dropped, err
}

// errSessionChanged is a create answered while the session changed: its
// node's owner is unknown (see createAndList).
var errSessionChanged = errors.New("zklock: the session changed while a create was out")

// testHookCreated, when a test sets it, runs in createAndList between the
// create's answer and the read of the session that owns the node.
var testHookCreated atomic.Pointer[func()]

// createNode creates prefix, ephemeral and sequential, carrying d's delete
// when d is not nil (one multi transaction; the create first, so that the
// tap knows it by its path either way). It reports whether d's node is
// gone: deleted, or already gone. When the delete fails (gone, or refused)
// the create is sent alone.
func (s *Session) createNode(prefix string, data []byte, acl []zk.ACL, d *pendingDelete) (node string, dropped bool, err error) {
	if d == nil || d.owner != s.conn.SessionID() {
		node, err = s.conn.Create(prefix, data, zk.FlagEphemeralSequential, acl)
		return node, false, err
	}
	res, err := s.conn.Multi(
		&zk.CreateRequest{Path: prefix, Data: data, Acl: acl, Flags: zk.FlagEphemeralSequential},
		&zk.DeleteRequest{Path: d.node, Version: -1})
	switch {
	case err == nil && len(res) == 2:
		return res[0].String, true, nil
	case len(res) == 2 && res[0].Error == nil && res[1].Error != nil:
		// The carried delete failed, so the transaction did not run:
		// create alone. Its node was already gone, or the delete was
		// refused (an ACL on that node's path without DELETE: another
		// lock's affair, which must not fail this acquisition); a refused
		// delete is left to createAndList's guaranteed one.
		node, err = s.conn.Create(prefix, data, zk.FlagEphemeralSequential, acl)
		return node, errors.Is(res[1].Error, zk.ErrNoNode), err
	case len(res) == 2 && res[0].Error != nil:
		return "", false, res[0].Error
	}
	return "", false, err
}
