package zklock

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/tierlock/tierlock/internal/closed"
	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/zklock/internal/session"
)

// Hold is one acquisition of a Lock: its node, its fencing token and its
// loss. Acquire returns it; Release ends it. Its methods are safe for
// concurrent use.
type Hold struct {
	f     *session.Floor
	m     *session.Member // the hold as the floor knows it (Grant, Forget, its loss)
	path  string          // the lock path
	lock  holdLock        // the lock it is a hold of
	node  string          // full path
	owner int64           // the session that created node
	token int64

	onGone func(node string, err error) // the lock's delete handler; nil: none

	lost     chan struct{}
	lostOnce sync.Once
	cause    error // written before lost closes

	released atomic.Bool
	dropOnce sync.Once

	revoked    chan struct{} // closed on a revocation request; nil unless revocable (revoke.go)
	revokeOnce sync.Once

	mu       sync.Mutex
	watching *time.Timer                 // arms the own-node watch (see watchOwn); nil once the hold ends
	unwatch  func()                      // removes the own-node watch's callback; nil when none
	pauses   *backoff.ExponentialBackOff // between failed reads of the own node (retryWatch); nil after one succeeds
}

// holdLock is what a hold needs of its lock, as functions the lock gives
// it (attempt, as it makes the hold), so that a hold names nothing of
// Lock's.
type holdLock struct {
	// attach makes h the lock's hold: false when the lock was closed
	// meanwhile.
	attach func(h *Hold) bool
	// leave takes h out of the lock, once: false when it is not the
	// lock's hold any more.
	leave func(h *Hold) bool
	// tellLost tells the lock's loss handler of h's node lost with cause.
	tellLost func(node string, cause error)
	// tellRevoked tells the lock of a revocation request for h (revoke.go).
	tellRevoked func(h *Hold)
}

// Node returns the full path of the hold's lock node.
func (h *Hold) Node() string {
	if h == nil {
		return ""
	}
	return h.node
}

// Token returns the hold's fencing token: a zxid that is at least the
// creation zxid of its node and strictly greater than the token of every
// earlier holder of the path (see waitTurn). A resource that records the
// highest token it has seen and rejects lower ones cannot be written by a
// holder that lost the lock without knowing it.
func (h *Hold) Token() int64 {
	if h == nil {
		return 0
	}
	return h.token
}

// Lost returns a channel that is closed when the hold ends other than by
// its Release: the session expired or was replaced, the connection dropped
// (under the default policy), the session could not be confirmed with the
// leader in time (see WithLossOnExpiryOnly), the node was deleted by
// someone else, or the Lock or the Session was closed. Release does not
// close it. A channel cannot be judged as it is received from: whether the
// hold stands at a given moment is Err's to say (see judge), which closes
// the channel too when it finds the hold lost.
func (h *Hold) Lost() <-chan struct{} {
	if h == nil {
		return closed.Chan
	}
	return h.lost
}

// Err returns why the hold was lost (wrapping ErrLockLost), or nil while
// it is valid, as judged at the moment it is asked (see judge).
func (h *Hold) Err() error {
	if h == nil {
		return errNil("Hold")
	}
	h.judge()
	if !h.isLost() {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrLockLost, h.cause)
}

// Revoked returns a channel that is closed when a revocation request for
// the hold arrives. It is nil (it never closes) when the lock was made
// without WithRevocable.
func (h *Hold) Revoked() <-chan struct{} {
	if h == nil {
		return closed.Chan
	}
	return h.revoked
}

// A hold begins (attempt, acquire.go): made for a node that leads, the
// session floor grants it (Floor.Grant, which rests on the session's state
// and its lease); publish makes it the lock's, and armWatch watches its
// node when that is worth it (both in holdwatch.go).

// A hold ends by Release or by lose, both through giveUp: out of the
// lock (detach), out of the session's valid holds (forget), its watch
// stopped, its node's delete queued (the write path).

// Release gives the hold up. It does not wait for ZooKeeper: the delete of
// the node goes out with the session's next create, or a moment (100µs)
// later, and the session's next create on the path queues behind it.
// Another process sees the lock free once the server has applied the
// delete. The delete is guaranteed: whatever error it meets, it is retried
// in the background until the node is gone or its session is over.
// Releasing a lost hold returns an error wrapping ErrLockLost and its
// cause; a second Release returns ErrNotHeld. A hold whose lease ran out
// while the process was stopped is lost, whether or not anything has told
// it yet: Release judges it as it is called (see judge).
func (h *Hold) Release() error {
	if h == nil {
		return errNil("Hold")
	}
	if !h.lock.leave(h) {
		return ErrNotHeld
	}
	h.judge()
	// Decided under mu, as lose decides a loss, and for a hold not lost
	// yet, by the floor (Leave), under the lock it ends holds under: the
	// loss comes first, traced, and Release says the hold was lost, or the
	// release does, and no loss is told nor traced. A hold the floor ended
	// first (a disconnection, an expiry, a lapse) may not have heard of it
	// yet: its loss is told here, before the release
	// (TestTraceReleaseMeetsDisconnection).
	h.mu.Lock()
	first := false
	if !h.isLost() {
		if cause := h.m.Leave(); cause != nil {
			first = h.endLocked(cause)
		}
	}
	lost := h.isLost()
	h.released.Store(true)
	if lost {
		trace.Released(h.f.Conn(), h.path, h.node) // Leave traced the others
	}
	h.mu.Unlock()
	if first {
		h.tellLoss()
	}
	h.giveUp()
	if lost {
		return fmt.Errorf("%w: %w", ErrLockLost, h.cause)
	}
	return nil
}

// judge asks the session floor whether it still vouches for the hold at
// this moment (session.Member.Vouch: the lease judged on the monotonic
// clock, its lapse ended and told then if its deadline has passed) and
// ends the hold if it does not. Every question asked of a hold (Release,
// Err, Txn) asks it first, so that what a process resumed from a
// stop is told is true before its lease's timer or its connection's events
// have caught up: nothing can tell a stopped process, but nothing it asks
// after it resumes may say the hold stands. h.mu must not be held.
func (h *Hold) judge() {
	if h.isLost() {
		return
	}
	if cause := h.m.Vouch(); cause != nil {
		h.lose(cause)
	}
}

func (h *Hold) isLost() bool {
	select {
	case <-h.lost:
		return true
	default:
		return false
	}
}

// lose ends the hold with cause, once: it closes lost, tells the lock's
// loss handler (unless the hold was released), and gives the hold up (the
// delete waits for the connection if need be, and is moot when the session
// is gone). It is the one way a hold ends without its holder's Release:
// a loss of the session's, the node's deletion, and the Close of its Lock
// or Session. A hold ended by a Close is not warned of: the program closed
// it. It may run on go-zookeeper's event goroutine: nothing here blocks.
func (h *Hold) lose(cause error) {
	// Under mu, as Release decides: either the loss comes first, traced,
	// and Release says it was lost, or the release does, and the news is
	// of our own delete (the own-node watch's event can come after giveUp
	// removed it): no loss is told, nor traced. Decided apart, a loss was
	// traced after the release (the replay refused it once in a nemesis
	// run).
	h.mu.Lock()
	first := h.endLocked(cause)
	released := h.released.Load()
	h.mu.Unlock()
	if !first {
		return
	}
	if !released {
		h.tellLoss()
	}
	h.giveUp()
}

// endLocked ends the hold with cause, once (it reports whether this was
// the first end), and traces the loss of a hold not released. h.mu is
// held.
func (h *Hold) endLocked(cause error) (first bool) {
	h.lostOnce.Do(func() {
		h.cause = cause
		close(h.lost)
		first = true
	})
	if first && !h.released.Load() {
		trace.Lost(h.f.Conn(), h.node, cause)
	}
	return first
}

// tellLoss warns of the hold's loss, unless the program closed it, and
// tells the lock's loss handler.
func (h *Hold) tellLoss() {
	if !errors.Is(h.cause, ErrSessionClosed) && !errors.Is(h.cause, ErrClosed) {
		h.f.Log().Warn("lock lost", "node", h.node, "cause", h.cause)
	}
	h.lock.tellLost(h.node, h.cause)
}

// giveUp is every hold's end, by Release or by lose: the hold leaves the
// session's valid holds, its own-node watch stops, and its node is deleted
// (once).
func (h *Hold) giveUp() {
	h.m.Forget()
	h.mu.Lock()
	t, unwatch := h.watching, h.unwatch
	h.watching, h.unwatch = nil, nil
	h.mu.Unlock()
	if t != nil {
		t.Stop()
	}
	if unwatch != nil {
		unwatch()
	}
	// Through the session's delete queue, so that its next create on the
	// path queues behind the delete.
	h.dropOnce.Do(func() {
		if h.f.HardStopped() {
			h.gone(h.f.ClosedErr())
			return // the session's close deletes it
		}
		var told func(error)
		if h.onGone != nil {
			told = h.gone
		}
		h.f.Writes().Delete(h.path, h.node, h.owner, told)
	})
}

// gone tells the lock's delete handler (WithDeleteHandler) the outcome of
// the delete of h's node, as the write path tells it (in the session's
// own errors: writelink.go).
func (h *Hold) gone(err error) {
	if h.onGone != nil {
		h.onGone(h.node, err)
	}
}
