package zklock

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/closed"
	"github.com/tierlock/tierlock/internal/trace"
)

// Hold is one acquisition of a Lock: its node, its fencing token and its
// loss. Acquire returns it; Release ends it. Its methods are safe for
// concurrent use.
type Hold struct {
	s     *Session
	path  string   // the lock path
	lock  holdLock // the lock it is a hold of
	node  string   // full path
	owner int64    // the session that created node
	token int64

	lost     chan struct{}
	lostOnce sync.Once
	cause    error // written before lost closes

	released atomic.Bool
	dropOnce sync.Once

	revoked    chan struct{} // closed on a revocation request; nil unless revocable (revoke.go)
	revokeOnce sync.Once

	mu       sync.Mutex
	watching *time.Timer // arms the own-node watch (see watchOwn); nil once the hold ends
	unwatch  func()      // removes the own-node watch's callback; nil when none
}

// holdLock is what a hold needs of its lock (a Lock is one).
type holdLock interface {
	// detach takes h out of the lock, once: false when it is not the
	// lock's hold any more.
	detach(h *Hold) bool
	// lost tells the lock's loss handler of h's node lost with cause.
	lost(node string, cause error)
	// revoke tells the lock of a revocation request for h (revoke.go).
	revoke(h *Hold)
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

// Lost returns a channel that is closed when the hold is lost: the session
// expired or was replaced, the connection dropped (under the default
// policy), the session could not be confirmed with the leader in time (see
// WithLossOnExpiryOnly), or the node was deleted by someone else. Release
// does not close it.
func (h *Hold) Lost() <-chan struct{} {
	if h == nil {
		return closed.Chan
	}
	return h.lost
}

// Err returns why the hold was lost (wrapping ErrLockLost), or nil while
// it is valid.
func (h *Hold) Err() error {
	if h == nil {
		return errNil("Hold")
	}
	if !h.isLost() {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrLockLost, h.cause)
}

// Release gives the hold up. It does not wait for ZooKeeper: the delete of
// the node goes out with the session's next create, or a moment (100µs)
// later, and the session's next create on the path queues behind it.
// Another process sees the lock free once the server has applied the
// delete. The delete is guaranteed: whatever error it meets, it is retried
// in the background until the node is gone or its session is over.
// Releasing a lost hold returns an error wrapping ErrLockLost and its
// cause; a second Release returns ErrNotHeld.
func (h *Hold) Release() error {
	if h == nil {
		return errNil("Hold")
	}
	if !h.lock.detach(h) {
		return ErrNotHeld
	}
	// Whether the hold was lost is decided before its node is given up.
	lost := h.isLost()
	trace.Released(h.s.conn, h.path, h.node)
	h.released.Store(true)
	h.giveUp()
	if lost {
		return fmt.Errorf("%w: %w", ErrLockLost, h.cause)
	}
	return nil
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
// is gone). A hold ended by its own Session's Close is not warned of: the
// program closed it. It may run on go-zookeeper's event goroutine: nothing
// here blocks.
func (h *Hold) lose(cause error) {
	first := false
	h.lostOnce.Do(func() {
		h.cause = cause
		close(h.lost)
		first = true
	})
	if !first {
		return
	}
	trace.Lost(h.s.conn, h.node, cause)
	if !h.released.Load() {
		if !errors.Is(cause, ErrSessionClosed) {
			h.s.log.Warn("lock lost", "node", h.node, "cause", cause)
		}
		h.lock.lost(h.node, cause)
	}
	h.giveUp()
}

// giveUp is every hold's end, by Release or by lose: the hold leaves the
// session's valid holds, its own-node watch stops, and its node is deleted
// (once).
func (h *Hold) giveUp() {
	h.s.forget(h)
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
		if h.s.hardStopped() {
			return // the session's close deletes it
		}
		h.s.dels.add(h.path, h.node, h.owner)
	})
}

// The own-node watch: a data watch on the holder's own node, through which
// a deletion by someone else (an operator's break) and a revocation
// request are noticed. It does nothing for loss before grant: when our node
// goes (an expiry, a deletion), our event and the next holder's are sent
// concurrently, so the next grant can come before we hear; the lease
// (lease.go) is what tells the holder first. So it is armed only where it
// buys something: at once for a revocable hold (a request written while
// the node waited is seen at the first read), and for other holds once
// they have lasted the lease's bound, after which an operator's deletion
// is seen within a round trip instead of at the release. A hold that ends
// sooner costs no request and no event.

// watchOwn reads the hold's node and watches it: a deletion, or the
// watch's end with the session, ends the hold; a revocation request in its
// data is passed on; a data change arms it again. Errors that leave the
// node's fate open are retried after a pause. It runs on a goroutine of
// its own (time.AfterFunc's, or the one a data change starts), briefly:
// under Connect the event reaches the session's callback; under NewSession
// it waits for the event here.
func (h *Hold) watchOwn() {
	s := h.s
	if h.isLost() || h.released.Load() || s.isClosed() {
		return
	}
	unwatch := func() {}
	if s.dispatching() {
		// Registered before the read, so that no event after it is missed.
		unwatch = s.watch(h.node, h.onOwnEvent)
	}
	data, stat, ev, err := s.conn.GetW(h.node)
	if !h.watchRead(stat, err) {
		unwatch()
		return
	}
	h.mu.Lock()
	if h.watching == nil && (h.isLost() || h.released.Load()) {
		h.mu.Unlock()
		unwatch()
		return
	}
	h.unwatch = unwatch
	h.mu.Unlock()
	if h.revoked != nil && IsRevocation(data) {
		h.lock.revoke(h)
	}
	if !s.dispatching() {
		// No event callback: the event arrives on ev only.
		select {
		case e := <-ev:
			h.onOwnEvent(e)
		case <-h.lost:
		case <-s.life.ctx.Done():
		}
	}
}

// watchRead handles the own-node watch's read: false when it did not set a
// watch (the node is gone, or not ours, or the read failed and is retried).
func (h *Hold) watchRead(stat *zk.Stat, err error) bool {
	switch {
	case errors.Is(err, zk.ErrNoNode):
		h.lose(ErrNodeDeleted)
	case err != nil:
		h.retryWatch(err)
	case stat.EphemeralOwner != h.owner:
		// The node was created in an older session than we thought (a
		// reconnect raced the create's reply): it dies with that one.
		h.lose(ErrSessionExpired)
	default:
		return true
	}
	return false
}

// onOwnEvent handles an event of the own-node watch. It may run on
// go-zookeeper's event goroutine: it does not block.
func (h *Hold) onOwnEvent(ev zk.Event) {
	switch ev.Type {
	case zk.EventNodeDeleted:
		h.lose(ErrNodeDeleted)
	case zk.EventNotWatching:
		h.lose(ErrSessionExpired)
	case zk.EventNodeDataChanged:
		// A revocation request, say: read it, and watch again.
		h.mu.Lock()
		h.unwatch = nil
		h.mu.Unlock()
		h.s.goBackground(h.watchOwn)
	}
}

// retryWatch arms the own-node watch again after a pause, when err left
// the node's fate open; a session that is over ends the hold.
func (h *Hold) retryWatch(err error) {
	s := h.s
	if s.conn.SessionID() != h.owner {
		h.lose(ErrSessionExpired)
		return
	}
	s.log.Debug("own-node watch failed; retrying", "node", h.node, "err", err)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.watching != nil {
		h.watching = time.AfterFunc(s.cfg.maxRetryWait, h.watchOwn)
	}
}

// RevokeMessage is what a revocation request writes into a lock node's
// data: Curator's LockInternals.REVOKE_MESSAGE.
const RevokeMessage = "__REVOKE__"

var revokeData = []byte(RevokeMessage)

// IsRevocation reports whether a lock node's data is a revocation request.
// A revoked node's data no longer says who created it (the request
// overwrote the host, pid and label).
func IsRevocation(data []byte) bool { return bytes.Equal(data, revokeData) }

// armWatch arms the hold's own-node watch when it is worth it (see
// hold.go, where the watch runs).
func (h *Hold) armWatch() {
	d := h.s.st.lease.bound()
	if h.revoked != nil {
		d = 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.isLost() || h.released.Load() {
		return
	}
	h.watching = time.AfterFunc(d, h.watchOwn)
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
