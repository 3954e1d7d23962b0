package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/writes"
)

// Errors are classified by what they say about the request, not by where
// they came from. go-zookeeper reports a failed socket write as the raw
// *net.OpError (EPIPE, ECONNRESET, i/o timeout), a request written but
// unanswered when the connection died as ErrConnectionClosed, one never
// written as ErrNoServer or ErrConnectionClosed, and so on: none of these
// says whether the server applied the request. Only an answer from the
// server does. Nor does zk.ErrClosing: it is go-zookeeper's own Close
// failing the requests it wrote and had no answer to (closing_test.go).

// Refusal reports whether err is the server's definite refusal of a
// request: sending it again would be refused again, so retrying is
// pointless. Everything else (lost connections, write errors of any kind,
// a moved or expired session, errors this package does not know) leaves
// the request's fate open and is worth retrying.
func Refusal(err error) bool {
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
	zk.ErrBadVersion, zk.ErrNotEmpty, zk.ErrReconfigDisabled,
	zk.ErrShortBuffer,  // the request does not fit go-zookeeper's buffer: it never will
	writes.ErrTooLarge, // nor would it: refused before sending
	ErrClosed, context.Canceled, context.DeadlineExceeded,
}

// NewBackOff is the policy of every retry: exponential from 10 ms, capped
// at the session's maximum interval, never giving up by itself (a context
// or the session bounds it).
func (s *Floor) NewBackOff() *backoff.ExponentialBackOff {
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(10*time.Millisecond),
		backoff.WithMaxInterval(s.cfg.MaxRetryWait),
		backoff.WithRandomizationFactor(retryJitter),
		backoff.WithMaxElapsedTime(0))
}

// retryJitter spreads the retries of many clients apart; the lease's
// explorer sets it to 0, so that a seed's schedule replays the same.
var retryJitter = backoff.DefaultRandomizationFactor

// Retry runs op until it succeeds, fails with a refusal (or an error op
// marks backoff.Permanent), ctx ends or the session closes, backing off
// between attempts.
func (s *Floor) Retry(ctx context.Context, op func() error) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	unlink := context.AfterFunc(s.life.ctx, stop)
	defer unlink()
	err := backoff.RetryNotify(func() error {
		err := op()
		if err != nil && Refusal(err) {
			return backoff.Permanent(err)
		}
		return err
	}, backoff.WithContext(s.NewBackOff(), ctx), s.notePause)
	if err != nil && s.Closed() && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("%w: %w", s.ClosedErr(), err)
	}
	return err
}

// notePause tells the test seam (Hooks.Paused), if set, of a pause that
// err asked for.
func (s *Floor) notePause(err error, _ time.Duration) {
	if h := s.cfg.Hooks; h != nil && h.Paused != nil {
		h.Paused(err)
	}
}
