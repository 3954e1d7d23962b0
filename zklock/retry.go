package zklock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"
)

// Errors are classified by what they say about the request, not by where
// they came from. go-zookeeper reports a failed socket write as the raw
// *net.OpError (EPIPE, ECONNRESET, i/o timeout), a request written but
// unanswered when the connection died as ErrConnectionClosed, one never
// written as ErrNoServer or ErrConnectionClosed, and so on: none of these
// says whether the server applied the request. Only an answer from the
// server does.

// refusal reports whether err is the server's definite refusal of a
// request: sending it again would be refused again, so retrying is
// pointless. Everything else (lost connections, write errors of any kind,
// a moved or expired session, errors this package does not know) leaves
// the request's fate open and is worth retrying.
func refusal(err error) bool {
	for _, r := range refusals {
		if errors.Is(err, r) {
			return true
		}
	}
	return false
}

var refusals = []error{
	zk.ErrNoNode, zk.ErrNodeExists, zk.ErrNoAuth, zk.ErrAuthFailed, zk.ErrInvalidACL, zk.ErrInvalidFlags,
	zk.ErrBadArguments, zk.ErrAPIError, zk.ErrNoChildrenForEphemerals,
	zk.ErrBadVersion, zk.ErrNotEmpty, zk.ErrReconfigDisabled, zk.ErrClosing,
	zk.ErrShortBuffer, // the request does not fit go-zookeeper's buffer: it never will
	ErrSessionClosed, context.Canceled, context.DeadlineExceeded,
}

// newBackOff is the policy of every retry: exponential from 10 ms, capped
// at the session's maximum interval, never giving up by itself (a context
// or the session bounds it).
func (s *Session) newBackOff() *backoff.ExponentialBackOff {
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(10*time.Millisecond),
		backoff.WithMaxInterval(s.cfg.maxRetryWait),
		backoff.WithMaxElapsedTime(0))
}

// retry runs op until it succeeds, fails with a refusal (or an error op
// marks backoff.Permanent), ctx ends or the session closes, backing off
// between attempts.
func (s *Session) retry(ctx context.Context, op func() error) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	unlink := context.AfterFunc(s.ctx, stop)
	defer unlink()
	err := backoff.Retry(func() error {
		err := op()
		if err != nil && refusal(err) {
			return backoff.Permanent(err)
		}
		return err
	}, backoff.WithContext(s.newBackOff(), ctx))
	if err != nil && s.isClosed() && !errors.Is(err, ErrSessionClosed) {
		return fmt.Errorf("%w: %w", s.closedErr(), err)
	}
	return err
}

// deleteGuaranteed deletes node, created by session owner, retrying
// whatever the error until the node is gone or its session is over
// (Curator's guaranteed delete). A session is over when the client holds
// another one (the server expired it, and its ephemeral nodes with it), or
// when the client has had no session for twice the session timeout (the
// server has expired it by then; this also ends the loop when the caller's
// connection was closed under a NewSession), or when the Session closed a
// connection of its own (the server then ends the session at once).
func (s *Session) deleteGuaranteed(node string, owner int64) {
	s.untilSessionOver(owner, func() (bool, error) {
		err := s.conn.Delete(node, -1)
		if refusal(err) && !errors.Is(err, zk.ErrNoNode) {
			s.log.Warn("lock node delete refused; retrying", "node", node, "err", err)
		}
		return err == nil || errors.Is(err, zk.ErrNoNode), err
	})
}

// untilSessionOver runs op, backing off between attempts, until it reports
// done or session owner is over (see deleteGuaranteed), whatever errors op
// meets. Closing the Session does not stop it unless the Session owns the
// connection.
func (s *Session) untilSessionOver(owner int64, op func() (done bool, err error)) {
	b := s.newBackOff()
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
		if s.hardStopped() {
			return
		}
		if id := s.conn.SessionID(); id != owner && owner != 0 {
			return
		}
		if s.conn.State() != zk.StateHasSession {
			if downSince.IsZero() {
				downSince = time.Now()
			} else if time.Since(downSince) > 2*s.timeout() {
				return
			}
		} else {
			downSince = time.Time{}
		}
		t := time.NewTimer(b.NextBackOff())
		select {
		case <-t.C:
		case <-s.hardStop:
			t.Stop()
			return
		}
	}
}

// deleteInBackground runs deleteGuaranteed on a goroutine the session
// tracks.
func (s *Session) deleteInBackground(node string, owner int64) {
	s.goBackground(func() { s.deleteGuaranteed(node, owner) })
}
