package session

import (
	"context"
	"errors"
	"time"

	"github.com/tierlock/tierlock/internal/mono"
	"github.com/tierlock/tierlock/internal/mutant"
	"github.com/tierlock/tierlock/internal/trace"
)

// The grant: whether a hold may begin, asked of the floor by the lock
// floor, and only here; and the loss signal, the one way the floor ends
// the holds it granted (holdSet.endAll, state.go and lapse.go).

// ErrNodeGone reports that a node's session is over (the node went with
// it) before its hold could be granted.
var ErrNodeGone = errors.New("zklock: lock node vanished while queued")

// Grant makes m one of the floor's valid holds once the floor can vouch
// for it: owner, the session that made the hold's node, is the current
// one, and the lease lies ahead, or a sync has renewed it. It returns
// ErrNodeGone when owner's session is over, the floor's ClosedErr once it
// is closed, and ctx's error when ctx ends first.
func (s *Floor) Grant(ctx context.Context, owner int64, m *Member) error {
	m.s = s
	syncs := 0 // the syncs this grant waited on, for awaitGrantable's pause
	for attempt := 0; ; attempt++ {
		s.st.mu.Lock()
		verdict := s.st.grantableLocked(owner)
		trace.Judged(s.zc, owner, verdict)
		if verdict == grantNow {
			s.st.holds[m] = struct{}{}
			s.lease.armLocked()
			s.st.mu.Unlock()
			return nil
		}
		changed := s.st.changed
		s.st.mu.Unlock()
		switch verdict {
		case grantClosed:
			return s.ClosedErr()
		case grantGone:
			return ErrNodeGone
		}
		if err := s.st.awaitGrantable(ctx, verdict, attempt, &syncs, changed); err != nil {
			return err
		}
	}
}

// Vouch is the question every question of a hold asks first: it returns
// nil while the floor vouches for m at this moment, and otherwise the
// cause it ended m with. The lease is judged as it is asked, on the
// monotonic clock (judgeLocked): a deadline that passed ends the session's
// holds now, whether or not the lease's timer has run. That timer is late
// exactly when it matters: a process resumed from a stop (SIGSTOP, a
// suspended VM, a long pause) runs its goroutines' timers and the
// lease's in no set order, and a job's Release that came first was told
// nil for a hold another process had been granted seconds before. The
// holds a lapse ends are told before Vouch returns, so it must not be
// called with a hold's own lock held (Leave judges for a release).
func (m *Member) Vouch() error {
	s := m.s
	if s == nil {
		return nil // not granted
	}
	if !m.out.Load() && s.lease.aheadAt(mono.Now()) {
		return nil // the deadline the timer is armed for lies ahead
	}
	s.st.mu.Lock()
	lap := s.lease.judgeLocked()
	err := m.ended
	s.st.mu.Unlock()
	lap.tell()
	return err
}

// Leave takes m out of the valid holds as its holder releases it, and
// returns nil; or, when the floor ended m first (a disconnection, an
// expiry, a new session, the lease's lapse, Close: holdSet.endAll), the cause
// it ended it with, whose loss the holder must tell before its release:
// m's lose may not have run yet. The lease is judged here too (Vouch), so
// that a deadline passed by the release's moment ends m rather than lets
// it go: the holds that lapse ends are told from a goroutine of the
// floor's, since the holder calls Leave with its hold's lock held. The
// release's trace step is recorded here, under the lock the floor ends
// holds under and traces the state or lapse that ends them: the trace
// orders the two as they were decided. Recorded apart, a release traced
// after a disconnection's step, its hold ended by that step and never told
// lost, was refused by the replay (TestTraceReleaseMeetsDisconnection).
func (m *Member) Leave() error {
	s := m.s
	if s == nil {
		return nil // never granted: not one of the holds
	}
	s.st.mu.Lock()
	lap := s.lease.judgeLocked()
	var err error
	if _, ok := s.st.holds[m]; !ok && m.ended != nil {
		err = m.ended
	} else {
		delete(s.st.holds, m)
		trace.Released(s.zc, m.path, m.node)
	}
	s.st.mu.Unlock()
	if len(lap.lost) > 0 {
		s.Go(lap.tell)
	}
	return err
}

// Waiting counts an acquisition that has (or is creating) a node, so that
// the lease is kept fresh for its grant: +1 as it begins, -1 as it ends.
func (s *Floor) Waiting(delta int) {
	s.st.mu.Lock()
	s.st.waiting += delta
	// The renewer only needs waking when the floor becomes active: it
	// then keeps itself awake while anything has a node.
	wake := delta > 0 && s.st.waiting == delta && len(s.st.holds) == 0
	s.st.mu.Unlock()
	if wake {
		s.lease.wake()
		s.st.wakePoll()
	}
}

// What grantableLocked finds.
const (
	grantNow    = iota
	grantClosed // the floor is closed
	grantGone   // the hold's session is over: its node went with it
	grantLag    // the connection has the hold's session but our view of it lags
	grantDown   // not connected: wait for the connection, or news that the session is over
	grantLease  // connected, but the lease is not ahead
)

// grantableLocked is Grant's verdict on a hold of a node made in session
// owner. st.mu is held.
func (st *sessionState) grantableLocked(owner int64) int {
	s := st.s
	switch {
	case st.closed:
		return grantClosed
	case owner != s.conn.SessionID():
		// The client holds another session (or none, after an expiry).
		return grantGone
	case owner != st.sessionID:
		// Under Wrap the state is polled: wait for it rather than give
		// up a node that exists.
		return grantLag
	case st.state != StateConnected && !(s.cfg.ExpiryOnly && st.state == StateDisconnected):
		if mutant.On(mutant.GoneWhileDown) {
			return grantGone // seeded bug: down is not over
		}
		return grantDown
	case !s.lease.grantableLocked(time.Now()):
		if mutant.On(mutant.GrantIgnoresLease) {
			return grantNow // seeded bug: the lease not looked at
		}
		return grantLease
	}
	return grantNow
}

// awaitGrantable waits for what may change Grant's verdict. Waiting on
// the lease, it syncs only when a sync can help (kAt): the chain that
// renews the lease needs its k written π after its touch was seen, and a
// sync before that is a round trip spent for nothing (a first grant under
// Wrap waited 50-90 ms more for them, each re-sent after a growing pause).
// syncs counts the syncs the grant waited on: the pause after a sync that
// did not help grows with them, not with the looks at kAt between them.
func (st *sessionState) awaitGrantable(ctx context.Context, verdict, attempt int, syncs *int, changed <-chan struct{}) error {
	s := st.s
	var refreshed <-chan struct{}
	var lag <-chan time.Time
	var k int64 // the chain's k as the sync was asked for
	switch verdict {
	case grantLease:
		if attempt == 0 {
			s.lease.waits.Add(1)
		}
		if d := time.Until(s.lease.kAt()); d > 0 {
			// Looked at again every kRecheck: π shrinks when the probe
			// reads the servers' tick (a first grant under Wrap, the tick
			// still taken as T/2, slept 3 s beside a probe answered a
			// moment later: make test run 74, TestColdRun).
			t := time.NewTimer(min(d, kRecheck))
			defer t.Stop()
			lag = t.C
		} else {
			k = s.lease.lastK.Load()
			refreshed = s.lease.refresh()
			*syncs++
		}
	case grantLag:
		lag = time.After(5 * time.Millisecond) // a polled state catches up within a tick
	}
	select {
	case <-lag:
	case <-refreshed:
		if s.lease.lastK.Load() == k || *syncs > 4 {
			// The sync failed, or syncs that each prove the session do
			// not make it grantable (a round trip as long as the lease):
			// the leader did not confirm us; do not spin.
			if !sleepCtx(ctx, min(time.Duration(*syncs)*10*time.Millisecond, s.cfg.MaxRetryWait)) {
				return ctx.Err()
			}
		}
	case <-changed:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.life.ctx.Done():
		return s.ClosedErr()
	}
	return nil
}

// kRecheck bounds a wait for a chain's k, so that a bound the lease
// learns meanwhile (the probed tick, a reconnection's timeout) moves it.
const kRecheck = 20 * time.Millisecond

// sleepCtx waits d (true), or until ctx ends (false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
