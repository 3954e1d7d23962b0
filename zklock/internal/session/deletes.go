package session

import (
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/trace"
)

// Guaranteed deletes (Curator's): retried whatever the error until the
// node is gone or its session is over.

// DeleteGuaranteed deletes node, created by session owner, retrying
// whatever the error until the node is gone or its session is over
// (Curator's guaranteed delete). A session is over when the client holds
// another one (the server expired it, and its ephemeral nodes with it), or
// when the connection was closed (by the floor, which owns it, or under
// NewSession by its owner: go-zookeeper's Close ends the session at once).
// Once the floor is closed, it also stops after twice the session
// timeout without a session, so that Close under Wrap is bounded.
func (s *Floor) DeleteGuaranteed(node string, owner int64) {
	s.UntilSessionOver(owner, func() (bool, error) {
		// Guarded: this closure is copied where DeleteGuaranteed is
		// inlined, and the copies' calls are not inlined themselves.
		if trace.Enabled {
			trace.RetrySent(s.zc, node)
		}
		err := s.conn.Delete(node, -1)
		if trace.Enabled {
			trace.RetryAnswered(s.zc, node, err)
		}
		if Refusal(err) && !errors.Is(err, zk.ErrNoNode) {
			s.log.Warn("lock node delete refused; retrying", "node", node, "err", err)
		}
		return err == nil || errors.Is(err, zk.ErrNoNode), err
	})
}

// UntilSessionOver runs op, backing off between attempts, until it reports
// done or session owner is over (see DeleteGuaranteed), whatever errors op
// meets. Closing the floor does not stop it unless the floor owns the
// connection; under Wrap, the owner's closing of the connection
// does.
func (s *Floor) UntilSessionOver(owner int64, op func() (done bool, err error)) {
	b := s.NewBackOff()
	var downSince time.Time
	for {
		// While the connection is down the request would only be queued,
		// to go out first thing on the next connection (where go-zookeeper
		// races with its own re-arming of watches): wait instead.
		if s.conn.State() == zk.StateHasSession {
			if done, _ := op(); done {
				return
			}
		}
		if s.HardStopped() || s.link.connGone.Load() {
			// Our connection is closed (by us, or under Wrap by its
			// owner): go-zookeeper's Close ended the session, and the
			// server deletes its nodes.
			return
		}
		if id := s.conn.SessionID(); id != owner && owner != 0 {
			return
		}
		// No give-up by time while the floor is open: a session can
		// outlive any outage, since a server that takes over (a restart, a
		// new leader) gives every session a fresh timeout, and a node left
		// to a live session would block its queue for the session's life.
		// Only a closed floor (under Wrap: Close waits for this)
		// stops after 2T without a session.
		if s.conn.State() != zk.StateHasSession && s.Closed() {
			if downSince.IsZero() {
				downSince = time.Now()
			} else if time.Since(downSince) > 2*s.lease.Timeout() {
				return
			}
		} else {
			downSince = time.Time{}
		}
		t := time.NewTimer(b.NextBackOff())
		select {
		case <-t.C:
		case <-s.life.hardStop:
			t.Stop()
			return
		}
	}
}
