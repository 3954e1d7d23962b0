package tier

import (
	"errors"

	"github.com/tierlock/tierlock/zklock"
)

var (
	// ErrNotHolder reports a Release, Token or re-entry with a context that
	// does not carry the current hold of this lock (a foreign context, or
	// one whose hold was already released).
	ErrNotHolder = errors.New("tier: context does not hold this lock")
	// ErrClosed reports use of a lock or registry after Close.
	ErrClosed = errors.New("tier: lock closed")
	// ErrNilLock reports a method called on a nil *Lock or *Registry.
	ErrNilLock = errors.New("tier: nil lock")

	// ErrLockLost is zklock.ErrLockLost: the hold ended without Release.
	// The held context's cause and the final Release's error wrap it.
	ErrLockLost = zklock.ErrLockLost
	// ErrInvalidPath is zklock.ErrInvalidPath, for lock paths and registry
	// keys.
	ErrInvalidPath = zklock.ErrInvalidPath
	// ErrNilContext is zklock.ErrNilContext.
	ErrNilContext = zklock.ErrNilContext
	// ErrInvalidOption is zklock.ErrInvalidOption, for this package's
	// options and the zklock options passed through WithLockOptions.
	ErrInvalidOption = zklock.ErrInvalidOption
)

// errReleased is the cause of a held context cancelled by its Release.
var errReleased = errors.New("tier: lock released")
