package tier

import (
	"errors"
	"sync/atomic"

	"github.com/tierlock/tierlock/zklock"
)

// closing is a lock's closed state, and the one rule by which every tier
// recipe (Lock, RWLock's readers and writers, Semaphore) orders Close
// against a grant that is being published.
//
// The race: a grant comes back from ZooKeeper, and before its hold is
// visible to Close, Close runs: it finds no hold to cancel, gives the
// node up (through the zklock lock's Close), and the grant then publishes
// a hold that nobody will ever cancel, while another process is granted
// the lock. (Checking the flag before publishing does not help: Close can
// run between the check and the publication.)
//
// The rule, as x/sync's semaphore orders a cancel against a grant: the
// grant publishes first and looks at the flag after; Close sets the flag
// first and looks for published holds after. Both flag operations are
// sequentially consistent atomics, so of the two, at least one sees the
// other: either Close finds the hold (and ends it), or the grant finds the
// flag set and withdraws the hold itself. When both see each other, both
// try to take the hold out of where it was published, and exactly one
// succeeds (a CompareAndSwap, or a delete under a mutex); that one ends it.
type closing struct {
	closed atomic.Bool
	done   chan struct{} // closed by begin: ends the waits in tier 1
}

func newClosing() closing { return closing{done: make(chan struct{})} }

// begin marks the lock closed, before Close looks for published holds,
// and ends tier-1 waits. It reports false when the lock was closed
// already (Close is idempotent).
func (c *closing) begin() bool {
	if c.closed.Swap(true) {
		return false
	}
	close(c.done)
	return true
}

func (c *closing) isClosed() bool { return c.closed.Load() }

// publish makes a granted hold visible to Close (add), then looks at the
// flag. It returns nil when Close had not begun: a Close that comes later
// finds the hold. Otherwise it calls withdraw, which takes the hold back
// unless Close already took it, and then undoes what the grant took (the
// node, the units of tier 1), and publish returns ErrClosed.
func (c *closing) publish(add, withdraw func()) error {
	add()
	if !c.closed.Load() {
		return nil
	}
	withdraw()
	return ErrClosed
}

// releaseErr is what a Release racing Close reports for its node's
// release: a node that Close gave up first (zklock.ErrNotHeld once closed)
// is ErrClosed, as for a Release that comes after Close.
func (c *closing) releaseErr(err error) error {
	if errors.Is(err, zklock.ErrNotHeld) && c.isClosed() {
		return ErrClosed
	}
	return err
}

// reportLoss is what the last Release of a hold returns: err, unless the
// hold was lost (cause, its context's cause before it ended, wraps
// ErrLockLost) and err does not say so already.
func reportLoss(err, cause error) error {
	if cause != nil && errors.Is(cause, ErrLockLost) && !errors.Is(err, ErrLockLost) {
		return cause
	}
	return err
}
