package tier

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tierlock/tierlock/zklock"
)

// Errors of this package.
var (
	// ErrNotHolder reports a Release, Token or re-entry with a context that
	// does not carry the current hold of this lock (a foreign context, or
	// one whose hold was already released). A Release given a context
	// that never carried a hold of the lock or registry, such as the one
	// passed to Acquire, also logs a warning (see Lock.Release).
	ErrNotHolder = errors.New("tier: context does not hold this lock")
	// ErrClosed reports use of a lock or registry after Close.
	ErrClosed = errors.New("tier: lock closed")
	// ErrNil reports a method called on a nil pointer of one of this
	// package's types; the error's message names the type. Methods that
	// return no error return zero values (and a closed channel where a
	// channel reports an end), never panic.
	ErrNil = errors.New("tier: method called on a nil pointer")
)

// Errors of package zklock, re-exported by one rule: a caller of this
// package never needs to import zklock to test an error. Every zklock
// sentinel that a tier call can return, or that can be (or be wrapped in)
// the cause of a held context, is re-exported here under the same name as
// the same value, so errors.Is(err, tier.ErrX) and errors.Is(err,
// zklock.ErrX) agree. zklock's ErrClosed, ErrNotHeld, ErrAlreadyHeld and
// ErrBusy are not: the gate in front of the zklock.Lock rules them out
// (one holder at a time, each hold released once), and a closed tier.Lock
// reports this package's own ErrClosed (and Txn reports a zklock
// ErrNotHeld, which a late goroutine can meet, as ErrNotHolder).
// TestErrorsReexported checks the list.
var (
	// ErrLockLost is zklock.ErrLockLost: the hold ended without Release.
	// The held context's cause and the final Release's error wrap it,
	// together with one of the causes below.
	ErrLockLost = zklock.ErrLockLost
	// ErrDisconnected is zklock.ErrDisconnected, a cause of a loss: the
	// connection to ZooKeeper was lost.
	ErrDisconnected = zklock.ErrDisconnected
	// ErrSessionExpired is zklock.ErrSessionExpired, a cause of a loss.
	ErrSessionExpired = zklock.ErrSessionExpired
	// ErrLeaseExpired is zklock.ErrLeaseExpired, a cause of a loss: the
	// session could not be confirmed with the leader in time.
	ErrLeaseExpired = zklock.ErrLeaseExpired
	// ErrNodeDeleted is zklock.ErrNodeDeleted, a cause of a loss: someone
	// else deleted the lock node.
	ErrNodeDeleted = zklock.ErrNodeDeleted
	// ErrSessionClosed is zklock.ErrSessionClosed: the session under the
	// lock was closed (it is also the cause of a hold that ends so).
	ErrSessionClosed = zklock.ErrSessionClosed
	// ErrNilSession is zklock.ErrNilSession, from New and NewRegistry.
	ErrNilSession = zklock.ErrNilSession
	// ErrInvalidPath is zklock.ErrInvalidPath, for lock paths and registry
	// keys.
	ErrInvalidPath = zklock.ErrInvalidPath
	// ErrNilContext is zklock.ErrNilContext.
	ErrNilContext = zklock.ErrNilContext
	// ErrInvalidOption is zklock.ErrInvalidOption, for this package's
	// options and the zklock options passed through WithLockOptions.
	ErrInvalidOption = zklock.ErrInvalidOption
	// ErrStaleHold is zklock.ErrStaleHold, from Txn: the server refused a
	// guarded write because the hold's node is gone. It matches
	// ErrLockLost too.
	ErrStaleHold = zklock.ErrStaleHold
	// ErrOutcomeUnknown is zklock.ErrOutcomeUnknown, from Txn: the request
	// went out and its answer never came.
	ErrOutcomeUnknown = zklock.ErrOutcomeUnknown
	// ErrInvalidOp is zklock.ErrInvalidOp, from Txn: an op refused before
	// anything was sent.
	ErrInvalidOp = zklock.ErrInvalidOp
)

// OpError is zklock.OpError, from Txn: the op that failed a guarded
// transaction at the server, by index, with the server's error.
type OpError = zklock.OpError

// fromZK presents an error of package zklock as this package's: zklock's
// ErrClosed, which a wait of ours gets when our own Close ends it, is this
// package's ErrClosed, and any other error names this package, the one
// called (see tierError). nil stays nil.
func fromZK(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zklock.ErrClosed):
		return ErrClosed
	}
	return tierError{err}
}

// tierError is an error of package zklock returned by this package: its
// message begins with "tier: " and says nothing of zklock, while errors.Is
// and errors.As see the original (the sentinels are the same values).
type tierError struct{ err error }

func (e tierError) Error() string {
	return "tier: " + strings.ReplaceAll(e.err.Error(), "zklock: ", "")
}

func (e tierError) Unwrap() error { return e.err }

// rootError reports an invalid registry root: its message speaks of a
// registry root, not of a lock, and errors.Is sees zklock's error, and so
// ErrInvalidPath.
type rootError struct {
	root, why string
	err       error
}

func (e rootError) Error() string { return fmt.Sprintf("tier: registry root %q: %s", e.root, e.why) }

func (e rootError) Unwrap() error { return e.err }

// lossErr is the cause of a held context whose ZooKeeper hold was lost.
func lossErr(cause error) error { return fromZK(fmt.Errorf("%w: %w", ErrLockLost, cause)) }

// closedByTier reports a zklock loss caused by the zklock lock's Close,
// which a tier lock calls only from its own Close, after it has ended and
// reported its holds: not a loss to report again.
func closedByTier(cause error) bool { return errors.Is(cause, zklock.ErrClosed) }

// errReleased is the cause of a held context cancelled by its Release.
var errReleased = errors.New("tier: lock released")

// errNil is the error of a method called on a nil *typ: it matches ErrNil.
func errNil(typ string) error { return nilError{msg: "tier: nil *" + typ} }

type nilError struct{ msg string }

func (e nilError) Error() string { return e.msg }

// Is reports whether target is ErrNil.
func (e nilError) Is(target error) bool { return target == ErrNil }
