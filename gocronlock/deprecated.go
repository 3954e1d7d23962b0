package gocronlock

import (
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/runonce"
)

// The names below are runonce's under gocronlock's names: the options,
// errors, outcomes and types of a Locker are runonce's, as cronlock's
// are. They stay, as the same values and types, so that code written
// against them keeps building; new code uses runonce's.

// LockerOption configures NewLocker.
//
// Deprecated: use runonce.Option, the same type.
type LockerOption = runonce.Option

// WithWindow is runonce.WithWindow.
//
// Deprecated: use runonce.WithWindow.
func WithWindow(d time.Duration) LockerOption { return runonce.WithWindow(d) }

// WithJobWindow is runonce.WithJobWindow (job: gocron's job name).
//
// Deprecated: use runonce.WithJobWindow.
func WithJobWindow(job string, d time.Duration) LockerOption { return runonce.WithJobWindow(job, d) }

// WithLockTimeout is runonce.WithLockTimeout.
//
// Deprecated: use runonce.WithLockTimeout.
func WithLockTimeout(d time.Duration) LockerOption { return runonce.WithLockTimeout(d) }

// WithACL is runonce.WithACL.
//
// Deprecated: use runonce.WithACL.
func WithACL(acl []zk.ACL) LockerOption { return runonce.WithACL(acl) }

// WithObserver is runonce.WithObserver.
//
// Deprecated: use runonce.WithObserver.
func WithObserver(fn func(Event)) LockerOption { return runonce.WithObserver(fn) }

// WithInstanceName is runonce.WithInstanceName.
//
// Deprecated: use runonce.WithInstanceName.
func WithInstanceName(name string) LockerOption { return runonce.WithInstanceName(name) }

// WithSpread is runonce.WithSpread.
//
// Deprecated: use runonce.WithSpread.
func WithSpread() LockerOption { return runonce.WithSpread() }

// Defaults of a Locker's options.
const (
	// DefaultWindow is runonce.DefaultWindow.
	//
	// Deprecated: use runonce.DefaultWindow.
	DefaultWindow = runonce.DefaultWindow
	// DefaultLockTimeout is runonce.DefaultLockTimeout.
	//
	// Deprecated: use runonce.DefaultLockTimeout.
	DefaultLockTimeout = runonce.DefaultLockTimeout
	// MaxKeyLen is runonce.MaxKeyLen.
	//
	// Deprecated: use runonce.MaxKeyLen.
	MaxKeyLen = runonce.MaxKeyLen
)

// Errors: runonce's values, so that errors.Is matches either name.
var (
	// ErrSkipped is runonce.ErrSkipped.
	//
	// Deprecated: use runonce.ErrSkipped.
	ErrSkipped = runonce.ErrSkipped
	// ErrLockHeld is runonce.ErrLockHeld.
	//
	// Deprecated: use runonce.ErrLockHeld.
	ErrLockHeld = runonce.ErrLockHeld
	// ErrAlreadyRan is runonce.ErrAlreadyRan.
	//
	// Deprecated: use runonce.ErrAlreadyRan.
	ErrAlreadyRan = runonce.ErrAlreadyRan
	// ErrYielded is runonce.ErrYielded.
	//
	// Deprecated: use runonce.ErrYielded.
	ErrYielded = runonce.ErrYielded
	// ErrSlowWrite is runonce.ErrSlowWrite.
	//
	// Deprecated: use runonce.ErrSlowWrite.
	ErrSlowWrite = runonce.ErrSlowWrite
	// ErrJobActive is runonce.ErrJobActive.
	//
	// Deprecated: use runonce.ErrJobActive.
	ErrJobActive = runonce.ErrJobActive
	// ErrInvalidKey is runonce.ErrInvalidKey.
	//
	// Deprecated: use runonce.ErrInvalidKey.
	ErrInvalidKey = runonce.ErrInvalidKey
	// ErrInvalidOption is runonce.ErrInvalidOption.
	//
	// Deprecated: use runonce.ErrInvalidOption.
	ErrInvalidOption = runonce.ErrInvalidOption
	// ErrClosed is runonce.ErrClosed.
	//
	// Deprecated: use runonce.ErrClosed.
	ErrClosed = runonce.ErrClosed
	// ErrNil is runonce.ErrNil.
	//
	// Deprecated: use runonce.ErrNil.
	ErrNil = runonce.ErrNil
	// ErrNilSession is runonce.ErrNilSession.
	//
	// Deprecated: use runonce.ErrNilSession.
	ErrNilSession = runonce.ErrNilSession
	// ErrNilContext is runonce.ErrNilContext.
	//
	// Deprecated: use runonce.ErrNilContext.
	ErrNilContext = runonce.ErrNilContext
)

// Outcome is runonce.Outcome.
//
// Deprecated: use runonce.Outcome.
type Outcome = runonce.Outcome

// The outcomes.
const (
	// Ran is runonce.Ran.
	//
	// Deprecated: use runonce.Ran.
	Ran = runonce.Ran
	// SkippedHeld is runonce.SkippedHeld.
	//
	// Deprecated: use runonce.SkippedHeld.
	SkippedHeld = runonce.SkippedHeld
	// SkippedRan is runonce.SkippedRan.
	//
	// Deprecated: use runonce.SkippedRan.
	SkippedRan = runonce.SkippedRan
	// SkippedYielded is runonce.SkippedYielded.
	//
	// Deprecated: use runonce.SkippedYielded.
	SkippedYielded = runonce.SkippedYielded
	// Failed is runonce.Failed.
	//
	// Deprecated: use runonce.Failed.
	Failed = runonce.Failed
)

// Event is runonce.Event.
//
// Deprecated: use runonce.Event.
type Event = runonce.Event

// Run is runonce.Run, what LastRun returns.
//
// Deprecated: use runonce.Run.
type Run = runonce.Run
