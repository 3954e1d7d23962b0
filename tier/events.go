package tier

import (
	"fmt"
	"sync"
	"time"
)

// What an observer (WithObserver) is told, and how every tier lock tells
// it.

// EventKind says what an Event reports.
type EventKind int

// The kinds of Event.
const (
	// Acquired: a goroutine got the lock (Tier says how; a reader of an
	// RWLock that rides the process's read node is TierHandoff).
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
	// TierZooKeeper: the hold needed the ZooKeeper lock; a wait that
	// ended there (WaitError, Failed) ended behind another process.
	TierZooKeeper Tier = 2
	// TierGate: a wait (WaitError, Failed) that ended in tier 1, behind
	// another goroutine of this process.
	TierGate Tier = 3
)

// String names the tier, as in logs.
func (t Tier) String() string {
	switch t {
	case TierHandoff:
		return "handoff"
	case TierZooKeeper:
		return "zookeeper"
	case TierGate:
		return "gate"
	}
	return fmt.Sprintf("Tier(%d)", int(t))
}

// Event is what an observer is told.
type Event struct {
	Kind EventKind
	Path string
	Tier Tier          // Acquired: TierHandoff or TierZooKeeper; Failed: where the wait ended (TierGate, TierZooKeeper; 0 when it did not wait)
	Wait time.Duration // Acquired, Failed: from the call to the outcome
	Held time.Duration // Released: how long the hold lasted
	Err  error         // Lost, Failed, TxnFailed
	Try  bool          // Acquired, Failed: the call was TryAcquire (no Acquiring came first)
}

// observer tells a lock's observer (nil fn: none) of its events: observe (lock.go)
// on the caller's goroutine, notify from a goroutine of its own
// for what zklock's handlers report (they must not block). close, in the
// lock's Close, stops new notifications. It does not wait for those in
// progress: they run user code, which may be what called Close (an
// observer that closes its lock on a loss), and waiting for its own caller
// would never end.
type observer struct {
	fn   func(Event)
	path string

	mu     sync.Mutex // orders notifications against close
	closed bool
}

func (o *observer) notify(ev Event) {
	if o.fn == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	go o.observe(ev)
}

func (o *observer) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
}
