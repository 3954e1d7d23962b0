package zklock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/session"
)

// Lock is a process-level lock on one ZooKeeper path. It serves one holder
// at a time and is not reentrant: Acquire returns a Hold, and a second
// Acquire while it stands returns ErrAlreadyHeld; calls that race each
// other get ErrBusy. Package tier puts a reentrant, cancellable gate in
// front of it.
type Lock struct {
	s        *Session
	f        *session.Floor // s's: what the lock asks of the session
	path     string
	data     []byte
	recheck  time.Duration
	acl      []zk.ACL
	onLost   func(node string, cause error)
	onGone   func(node string, err error)    // told a hold's delete's outcome (WithDeleteHandler); nil: none
	rule     queueRule                       // who may go, whom to watch: mutexRule
	marker   string                          // what follows the GUID in our node names: lockMarker
	parse    func(name string) (int32, bool) // which children queue, and their sequence: nil for Contender
	mayQueue func() error                    // refuses an acquisition before it queues (a write lock behind our own read node); nil: none
	noWait   func() bool                     // makes Acquire a try that fails (a downgrade that would wait for ever); nil: never

	// Revocation (revoke.go): revocable holds watch their node's data for
	// RevokeMessage, and onRevoked (nil: none) is told of a request.
	revocable bool
	onRevoked func(node string)
	// watchNode: holds watch their node from the grant (WithNodeWatch), as
	// revocable ones do.
	watchNode bool
	// persistent: the lock path is made a persistent node, not a
	// container (WithPersistentPath).
	persistent bool

	onPosition func(Position) // Acquire's position handler (position.go); nil: none

	// What the acquisition in progress saw of the queue, for the
	// WaitError of a wait that ends (holder.go): written by the acquiring
	// goroutine alone, as busy makes it, and read by the waits behind it.
	view queueView
	// onBoard: the acquisition's wait is on its session's stall board
	// (stalled.go), which its end must tell; stood: the head its wait
	// stands behind and since when, kept here until the wait is old
	// enough for the board to read. Written and read by the acquiring
	// goroutine alone, as view's writes are.
	onBoard bool
	stood   struct {
		head  string
		since time.Time
	}

	mu     sync.Mutex
	busy   bool
	closed bool
	hold   *Hold
	abort  context.CancelCauseFunc // ends the acquisition in progress (Close); nil when none
}

// current returns the lock's hold, or nil.
func (l *Lock) current() *Hold {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hold
}

// currentNode returns the node of the lock's hold, or "".
func (l *Lock) currentNode() string { return l.current().Node() }

// lost tells the lock's loss handler (WithLossHandler) of node lost.
func (l *Lock) lost(node string, cause error) {
	if l.onLost != nil {
		l.onLost(node, cause)
	}
}

// attach makes h, granted, the lock's hold, unless the lock was closed
// meanwhile (false).
func (l *Lock) attach(h *Hold) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.hold = h
	return true
}

// detach takes h out of the lock, once: false when it is not the lock's
// hold any more (released already).
func (l *Lock) detach(h *Hold) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hold != h {
		return false
	}
	l.hold = nil
	return true
}

// Session returns the session the lock lives on.
func (l *Lock) Session() *Session {
	if l == nil {
		return nil
	}
	return l.s
}

// Path returns the lock path the lock's nodes are created under.
func (l *Lock) Path() string {
	if l == nil {
		return ""
	}
	return l.path
}

// Close ends the lock: a hold it has ends as every hold ended behind its
// holder's back does (Lost closes, Err wraps ErrLockLost and ErrClosed, the
// loss handler is told, and the node is deleted), before Close returns and
// so before another process can be granted the lock; an acquisition in
// progress returns ErrClosed, leaving no node; later calls return
// ErrClosed, and a Release of the ended hold returns an error wrapping
// ErrLockLost and ErrClosed. Close is idempotent.
func (l *Lock) Close() error {
	if l == nil {
		return errNil("Lock")
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	h := l.hold
	if l.abort != nil {
		l.abort(ErrClosed)
	}
	l.mu.Unlock()
	if h != nil {
		// The hold stays the lock's until its holder releases it, so that
		// Release reports the loss rather than ErrNotHeld.
		h.lose(ErrClosed)
	}
	return nil
}

// errNodeGone reports that our queued node disappeared before we held the
// lock.
var errNodeGone = session.ErrNodeGone

// errBusyDelete makes TryAcquire report false: our previous node is still
// queued.
var errBusyDelete = errors.New("zklock: previous node not yet deleted")

// ourNode is our node in the queue, as enqueue leaves it.
type ourNode struct {
	node  string  // full path
	owner int64   // the session that created it
	q     []entry // the latest listing, sorted; nil when it failed or missed our node
	at    int     // our node's index in q (-1: absent)
	pzxid int64   // the listing's pzxid
}
