package zklock

import (
	"errors"
	"fmt"

	"github.com/tierlock/tierlock/zklock/internal/session"
	"github.com/tierlock/tierlock/zklock/internal/writes"
)

var (
	// ErrInvalidPath reports a lock path that is not absolute, ends in a
	// slash, or has an empty, "." or ".." segment or a forbidden character.
	ErrInvalidPath = errors.New("zklock: invalid lock path")
	// ErrNilSession reports a nil session or connection, and a method
	// called on a nil *Session.
	ErrNilSession = errors.New("zklock: nil session")
	// ErrNil reports a method called on a nil pointer of one of this
	// package's types; the error's message names the type. Methods that
	// return no error return zero values (and a closed channel where a
	// channel reports an end), never panic.
	ErrNil = errors.New("zklock: method called on a nil pointer")
	// ErrSessionClosed reports use of a session (or a lock on it) after Close.
	ErrSessionClosed = session.ErrClosed
	// ErrClosed reports use of a lock after Close.
	ErrClosed = errors.New("zklock: lock closed")
	// ErrNotHeld reports a Release without a hold (including a second Release).
	ErrNotHeld = errors.New("zklock: lock not held")
	// ErrAlreadyHeld reports an Acquire on a lock already held: zklock locks
	// are not reentrant (package tier adds reentrancy).
	ErrAlreadyHeld = errors.New("zklock: lock already held")
	// ErrBusy reports concurrent calls on one Lock: a Lock serves one holder
	// at a time, and tier's gate is what serializes goroutines in front of it.
	ErrBusy = errors.New("zklock: concurrent use of a lock")
	// ErrLockLost reports that a hold ended without Release; the error wraps
	// the cause (ErrDisconnected, ErrLeaseExpired, ErrSessionExpired,
	// ErrNodeDeleted or ErrSessionClosed).
	ErrLockLost = errors.New("zklock: lock lost")
	// ErrDisconnected is the cause of a loss on a disconnection under the
	// default policy: the holder can no longer know whether it holds the lock.
	ErrDisconnected = session.ErrDisconnected
	// ErrSessionExpired is the cause of a loss on session expiry: the
	// ephemeral node is gone and another process may hold the lock.
	ErrSessionExpired = session.ErrSessionExpired
	// ErrNodeDeleted is the cause of a loss when the lock node was deleted by
	// someone else.
	ErrNodeDeleted = errors.New("zklock: lock node deleted")
	// ErrInvalidOption reports an option with an out-of-range value.
	ErrInvalidOption = errors.New("zklock: invalid option")
	// ErrNoHolder reports a revocation asked of a lock path that nobody
	// holds or waits for (RevokeHolder).
	ErrNoHolder = errors.New("zklock: lock has no holder")
	// ErrNodeNotFound reports a revocation asked of a lock node that does
	// not exist: it was released, or its session ended (RevokeNode).
	ErrNodeNotFound = errors.New("zklock: lock node not found")
)

// ErrNilContext reports a nil context.Context argument.
var ErrNilContext = errors.New("zklock: nil context")

// ErrLeaseExpired is the cause of a loss when the session could not be
// confirmed with the ensemble's leader in time: the server may be about to
// expire the session, or may have done so already, while the connection
// looks healthy (a follower cut off from the leader, a partition that lets
// only the server's traffic through, a blocked write). See
// WithLossOnExpiryOnly for the bounds.
var ErrLeaseExpired = session.ErrLeaseExpired

// errNil is the error of a method called on a nil *typ: it matches ErrNil.
func errNil(typ string) error { return nilError{msg: "zklock: nil *" + typ} }

type nilError struct{ msg string }

func (e nilError) Error() string { return e.msg }

// Is reports whether target is ErrNil.
func (e nilError) Is(target error) bool { return target == ErrNil }

// ErrUpgrade reports a write acquisition by a holder of the read lock: an
// upgrade from read to write is refused rather than queued, because the
// write node would wait behind the holder's own read node forever.
// Release the read lock first. (The other way round, a downgrade, is
// allowed: a holder of the write lock may take the read lock.)
var ErrUpgrade = errors.New("zklock: read-to-write upgrade refused (release the read lock first)")

// ErrDowngradeBlocked reports a read acquisition by a holder of the write
// lock that could not go at once: a writer of another process queued
// before the read node, and it waits for our write lock, so waiting for it
// would never end. Nothing is left queued; release the write lock first,
// or keep it.
var ErrDowngradeBlocked = errors.New("zklock: downgrade blocked by a writer of another process (release the write lock first)")

// ErrOutcomeUnknown reports a transaction (Hold.Txn, Session.Txn) whose
// request was sent but whose answer never came (the connection was lost,
// the session expired with the request on the wire, or ctx ended first):
// it may or may not have been applied. It is never sent again, since its
// ops need not be idempotent; read back what it wrote to learn which (the
// read is ordered after it: see docs/guarded-writes.md).
var ErrOutcomeUnknown = writes.ErrOutcomeUnknown

// OpError reports the caller's op that failed a transaction at the server.
// Nothing of the transaction was applied.
type OpError struct {
	Index int    // the op's index among the ops given to Txn
	Path  string // the path it names
	Err   error  // the server's error, such as zk.ErrNoNode or zk.ErrBadVersion
}

func (e *OpError) Error() string {
	return fmt.Sprintf("zklock: transaction op %d (%s): %v", e.Index, e.Path, e.Err)
}

// Unwrap returns the server's error.
func (e *OpError) Unwrap() error { return e.Err }
