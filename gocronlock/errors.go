package gocronlock

import (
	"errors"

	"github.com/tierlock/tierlock/runonce"
)

// Errors, for errors.Is. Every error Locker.Lock returns makes gocron skip
// that run; ErrSkipped marks the deliberate skips, the others are failures
// worth a warning. The Locker's are runonce's own values, so that either
// package's match.
var (
	// ErrSkipped reports a run this instance must not make because another
	// made it or is making it, or leaves to another: ErrLockHeld,
	// ErrAlreadyRan and ErrYielded match it.
	ErrSkipped = runonce.ErrSkipped
	// ErrLockHeld reports a job whose lock is held elsewhere (another
	// instance runs it) or by a run of this instance still going: the run
	// is skipped, not queued. It matches ErrSkipped.
	ErrLockHeld = runonce.ErrLockHeld
	// ErrAlreadyRan reports a tick that a run started less than the job's
	// window ago, by the server's clock, already covered. It matches
	// ErrSkipped.
	ErrAlreadyRan = runonce.ErrAlreadyRan
	// ErrYielded reports a run this instance stepped back from, so that
	// another instance makes it (WithSpread). It matches ErrSkipped.
	ErrYielded = runonce.ErrYielded
	// ErrSlowWrite reports a run given up because the run node's write
	// was answered too late to rule out that another instance ran the
	// tick: the tick is lost, never run twice.
	ErrSlowWrite = runonce.ErrSlowWrite
	// ErrJobActive reports a RemoveJob refused because an instance still
	// schedules the job. Nothing was deleted.
	ErrJobActive = runonce.ErrJobActive
	// ErrInvalidKey reports a job name that cannot name a lock: empty,
	// longer than MaxKeyLen bytes, or making, once escaped below the
	// Locker's root, a path longer than ZooKeeper takes (see
	// zklock.ValidatePath).
	ErrInvalidKey = runonce.ErrInvalidKey
	// ErrInvalidOption reports an option with a value out of its range.
	ErrInvalidOption = runonce.ErrInvalidOption
	// ErrNotLeader is IsLeader's answer while this instance does not lead.
	ErrNotLeader = errors.New("gocronlock: not the leader")
	// ErrClosed reports a call on a Locker or Elector after its Close.
	ErrClosed = runonce.ErrClosed
	// ErrNil reports a method called on a nil pointer.
	ErrNil = runonce.ErrNil
	// ErrNilSession reports a nil *zklock.Session given to NewLocker or
	// NewElector. It matches zklock.ErrNilSession.
	ErrNilSession = runonce.ErrNilSession
	// ErrNilContext reports a nil context. It matches zklock.ErrNilContext.
	ErrNilContext = runonce.ErrNilContext
)
