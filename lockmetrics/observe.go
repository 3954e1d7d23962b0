package lockmetrics

import (
	"context"
	"errors"

	"github.com/tierlock/tierlock/tier"
)

// Observe records one tier event; pass it to tier.WithObserver. It runs on
// the goroutine that acquires or releases: a map read and a few atomic
// adds.
//
// The waiters gauge rises on Acquiring and falls on the Acquired or Failed
// that tier promises will follow on the same goroutine (Try false), so it
// is never left raised by a finished call; and since the rise comes before
// the fall in that goroutine's order, and the gauge is a sum of atomic
// adds, no scrape sees it below zero. The holders gauge rises on
// Acquired and falls on Released, which tier also tells when Close ends a
// hold; a lost hold stays counted until its Release, since its goroutine
// still holds the gate until then.
func (c *Collector) Observe(ev tier.Event) {
	if c == nil {
		return
	}
	s := c.seriesFor(ev.Path)
	switch ev.Kind {
	case tier.Acquiring:
		s.waiters.Inc()
	case tier.Acquired:
		if !ev.Try {
			s.waiters.Dec()
		}
		s.wait[outcomeAcquired].Observe(ev.Wait.Seconds())
		s.holders.Inc()
		if ev.Tier == tier.TierHandoff {
			s.viaHandoff.Inc()
		} else {
			s.viaZooKeeper.Inc()
		}
	case tier.Failed:
		if !ev.Try {
			s.waiters.Dec()
		}
		r := failureReason(ev.Err)
		s.wait[failureOutcome(r)].Observe(ev.Wait.Seconds())
		s.failures[r].Inc()
	case tier.Released:
		s.hold.Observe(ev.Held.Seconds())
		s.holders.Dec()
	case tier.Lost:
		s.losses[lossReason(ev.Err)].Inc()
	case tier.TxnFailed:
		s.txns.Inc()
	case tier.Revoked:
		s.revocations.Inc()
	}
}

// waitOutcomes are the values of acquire_wait_seconds's outcome label:
// the lock was acquired; the caller's context ended the wait (cancelled
// or past its deadline); the acquisition failed otherwise.
var waitOutcomes = [...]string{"acquired", "canceled", "failed"}

const (
	outcomeAcquired = iota
	outcomeCanceled
	outcomeFailed
)

// failureReasons are the values of acquire_failures_total's reason label.
var failureReasons = [...]string{"canceled", "deadline_exceeded", "closed", "error"}

const (
	reasonCanceled = iota
	reasonDeadline
	reasonClosed
	reasonError
)

func failureReason(err error) int {
	switch {
	case errors.Is(err, context.Canceled):
		return reasonCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return reasonDeadline
	case errors.Is(err, tier.ErrClosed), errors.Is(err, tier.ErrSessionClosed):
		return reasonClosed
	}
	return reasonError
}

// failureOutcome is the wait's outcome of a failure of reason r.
func failureOutcome(r int) int {
	if r == reasonCanceled || r == reasonDeadline {
		return outcomeCanceled
	}
	return outcomeFailed
}

// lossReasons are the causes a loss's error wraps (with tier.ErrLockLost),
// and the values of holds_lost_total's reason label; "other" is last.
var lossReasons = [...]struct {
	err   error
	label string
}{
	{tier.ErrDisconnected, "disconnected"},
	{tier.ErrLeaseExpired, "lease_expired"},
	{tier.ErrSessionExpired, "session_expired"},
	{tier.ErrNodeDeleted, "node_deleted"},
	{tier.ErrSessionClosed, "session_closed"},
	{nil, "other"},
}

func lossReason(err error) int {
	for i, lr := range lossReasons[:len(lossReasons)-1] {
		if errors.Is(err, lr.err) {
			return i
		}
	}
	return len(lossReasons) - 1
}
