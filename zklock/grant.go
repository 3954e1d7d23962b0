package zklock

import (
	"context"
	"time"
)

// The admission decision: whether a hold may begin. Package zklock's lock
// files ask the session here, and only here; the answer rests on the
// session's state and its lease (lease.go).

// queued counts an acquisition that has (or is creating) a node, so that
// the lease is kept fresh for its grant.
func (s *Session) queued(delta int) {
	s.mu.Lock()
	s.waiting += delta
	// The renewer only needs waking when the session becomes active: it
	// then keeps itself awake while anything has a node.
	wake := delta > 0 && s.waiting == delta && len(s.holds) == 0
	s.mu.Unlock()
	if wake {
		s.lease.wake()
	}
}

// grant makes h one of the session's valid holds once the session can
// vouch for it: h's session is the current one, and the lease lies ahead,
// or a sync has renewed it. It returns errNodeGone when h's session is over
// (the node went with it) and ctx's error when ctx ends first. Package
// zklock's lock files ask the session, and only here, whether a hold may
// begin.
func (s *Session) grant(ctx context.Context, h *Hold) error {
	for attempt := 0; ; attempt++ {
		s.mu.Lock()
		verdict := s.grantableLocked(h)
		if verdict == grantNow {
			s.holds[h] = struct{}{}
			s.lease.armLocked()
			s.mu.Unlock()
			return nil
		}
		changed := s.changed
		s.mu.Unlock()
		switch verdict {
		case grantClosed:
			return s.closedErr()
		case grantGone:
			return errNodeGone
		}
		if err := s.awaitGrantable(ctx, verdict, attempt, changed); err != nil {
			return err
		}
	}
}

// What grantableLocked finds.
const (
	grantNow    = iota
	grantClosed // the session is closed
	grantGone   // h's session is over: its node went with it
	grantLag    // the connection has h's session but our view of it lags
	grantDown   // not connected: wait for the connection, or news that the session is over
	grantLease  // connected, but the lease is not ahead
)

func (s *Session) grantableLocked(h *Hold) int {
	switch {
	case s.closed:
		return grantClosed
	case h.owner != s.conn.SessionID():
		// The client holds another session (or none, after an expiry).
		return grantGone
	case h.owner != s.sessionID:
		// Under NewSession the state is polled: wait for it rather than
		// give up a node that exists.
		return grantLag
	case s.state != StateConnected && !(s.cfg.expiryOnly && s.state == StateDisconnected):
		return grantDown
	case !s.lease.validLocked(time.Now()):
		return grantLease
	}
	return grantNow
}

// awaitGrantable waits for what may change grant's verdict.
func (s *Session) awaitGrantable(ctx context.Context, verdict, attempt int, changed <-chan struct{}) error {
	var refreshed <-chan struct{}
	var lag <-chan time.Time
	switch verdict {
	case grantLease:
		if attempt == 0 {
			s.lease.waits.Add(1)
		}
		refreshed = s.lease.refresh()
	case grantLag:
		lag = time.After(5 * time.Millisecond) // a polled state catches up within a tick
	}
	select {
	case <-lag:
	case <-refreshed:
		if attempt > 0 {
			// The leader did not confirm us: do not spin.
			if !sleepCtx(ctx, min(time.Duration(attempt)*10*time.Millisecond, s.cfg.maxRetryWait)) {
				return ctx.Err()
			}
		}
	case <-changed:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.ctx.Done():
		return s.closedErr()
	}
	return nil
}
