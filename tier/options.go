package tier

import (
	"fmt"
	"time"

	"github.com/tierlock/tierlock/zklock"
)

type config struct {
	maxHandoffs int
	maxHold     time.Duration
	observer    func(Event)
	zkOpts      []zklock.Option
	revocable   bool
}

// Option configures every tier lock: New, NewRWLock, NewSemaphore and
// their registries. WithObserver and WithLockOptions apply to all of them;
// WithHandoff and WithRevocable are a Lock's (and a Registry's) only, and
// NewRWLock and NewSemaphore refuse them with ErrInvalidOption. Every tier
// lock logs through its session's logger (zklock.WithLogger).
type Option func(*config)

// WithHandoff turns on bounded local hand-off: when the last Release finds
// goroutines of this process waiting at the gate, it passes the hold to the
// next of them without giving up the ZooKeeper node, at most maxHandoffs
// times in a row and only while the node has been held for less than
// maxHold; then the node is released as usual and other processes get their
// turn. A hand-off costs a channel operation instead of ZooKeeper round
// trips, which is where a busy process's throughput comes from; the price
// is that other processes wait up to maxHold (plus one hold) longer, and
// that consecutive local holders share one node and so one fencing token:
// a guarded resource must accept a token equal to the last one it saw.
func WithHandoff(maxHandoffs int, maxHold time.Duration) Option {
	return func(c *config) { c.maxHandoffs, c.maxHold = maxHandoffs, maxHold }
}

// WithObserver calls fn at the start of every blocking acquisition and on
// every acquisition, release, loss, revocation request (see WithRevocable)
// and refused guarded write, so that metrics can be plugged in without a
// dependency here (package lockmetrics is one). fn runs on the goroutine
// that acquired or released (on a background goroutine for a loss or a
// revocation) and must be quick. fn may call the lock's Close (to stop on
// a loss, say): Close does not wait for a call of fn in progress, and no
// loss or revocation is told after Close has returned.
func WithObserver(fn func(Event)) Option { return func(c *config) { c.observer = fn } }

// WithRevocable makes holds revocable, Curator-style: a revocation request
// written into the hold's node (zklock.RevokeNode, zklock.RevokeHolder,
// Curator's Revoker.attemptRevoke) closes Lock.Revoked (Registry.Revoked)
// for the hold riding on that node and tells the observer (Revoked). It is
// a request, not a cancellation: the held context stays live until the
// holder releases. A revoked node is never handed off: with WithHandoff,
// the next Release gives it back to ZooKeeper and local waiters queue
// there behind the other processes.
func WithRevocable() Option { return func(c *config) { c.revocable = true } }

// WithLockOptions passes options to the underlying zklock lock
// (zklock.Lock, RWLock or Semaphore).
func WithLockOptions(opts ...zklock.Option) Option {
	return func(c *config) { c.zkOpts = append(c.zkOpts, opts...) }
}

func buildConfig(opts []Option) (config, error) {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.maxHandoffs < 0 || c.maxHold < 0 || (c.maxHandoffs > 0) != (c.maxHold > 0) {
		return c, fromZK(fmt.Errorf("%w: hand-off bounds %d, %v: both must be positive, or both zero", ErrInvalidOption, c.maxHandoffs, c.maxHold))
	}
	return c, nil
}

// buildRecipeConfig is buildConfig for a read/write lock or a semaphore
// (what), which have no hand-off and no revocation of their own.
func buildRecipeConfig(what string, opts []Option) (config, error) {
	c, err := buildConfig(opts)
	switch {
	case err != nil:
		return c, err
	case c.maxHandoffs > 0:
		return c, fromZK(fmt.Errorf("%w: WithHandoff is a Lock's option, not a %s's", ErrInvalidOption, what))
	case c.revocable:
		return c, fromZK(fmt.Errorf("%w: WithRevocable is a Lock's option, not a %s's", ErrInvalidOption, what))
	}
	return c, nil
}
