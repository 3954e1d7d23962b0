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

// Option configures New and NewRegistry: a Lock. NewRWLock, NewSemaphore
// and their registries take the underlying zklock's options directly, and
// what only a Lock has (hand-off, revocation, the observer) cannot be
// given to them. Every tier lock logs through its session's logger
// (zklock.WithLogger).
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
// revocation) and must be quick.
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

// WithLockOptions passes options to the underlying zklock.Lock.
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
		return c, fmt.Errorf("%w: hand-off bounds %d, %v: both must be positive, or both zero", ErrInvalidOption, c.maxHandoffs, c.maxHold)
	}
	return c, nil
}

// EventKind says what an Event reports.
type EventKind int

// The kinds of Event.
const (
	// Acquired: a goroutine got the lock (Tier says how).
	Acquired EventKind = iota
	// Released: a hold ended: its last Release, or Close while it was held.
	Released
	// Lost: the ZooKeeper hold ended without Release.
	Lost
	// Failed: an acquisition gave up (Err says why).
	Failed
	// TxnFailed: a guarded write (Lock.Txn) was refused because its hold
	// is stale: lost (known to the client, or found so by the server's
	// check) or no longer the current local hold. Err says why; nothing
	// of the transaction was applied.
	TxnFailed
	// Acquiring: Acquire started a new acquisition (not a re-entry) and may
	// block. Exactly one Acquired or Failed, with Try false, follows on the
	// same goroutine, so an observer can count the waiters. TryAcquire,
	// which never blocks, tells none.
	Acquiring
	// Revoked: a revocation request for the current hold's node arrived
	// (see WithRevocable).
	Revoked
)

// String names the kind, as in logs.
func (k EventKind) String() string {
	switch k {
	case Acquired:
		return "acquired"
	case Released:
		return "released"
	case Lost:
		return "lost"
	case Failed:
		return "failed"
	case TxnFailed:
		return "txn-failed"
	case Acquiring:
		return "acquiring"
	case Revoked:
		return "revoked"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Tier says which tier an acquisition stopped at.
type Tier int

// The tiers an acquisition can stop at.
const (
	// TierHandoff: the hold came from a local hand-off; the node was kept.
	TierHandoff Tier = 1
	// TierZooKeeper: the hold needed the ZooKeeper lock.
	TierZooKeeper Tier = 2
)

// String names the tier, as in logs.
func (t Tier) String() string {
	switch t {
	case TierHandoff:
		return "handoff"
	case TierZooKeeper:
		return "zookeeper"
	}
	return fmt.Sprintf("Tier(%d)", int(t))
}

// Event is what an observer is told.
type Event struct {
	Kind EventKind
	Path string
	Tier Tier          // Acquired: TierHandoff or TierZooKeeper
	Wait time.Duration // Acquired, Failed: from the call to the outcome
	Held time.Duration // Released: how long the hold lasted
	Err  error         // Lost, Failed, TxnFailed
	Try  bool          // Acquired, Failed: the call was TryAcquire (no Acquiring came first)
}
