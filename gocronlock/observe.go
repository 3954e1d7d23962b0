package gocronlock

import "github.com/tierlock/tierlock/runonce"

// Outcome is how a Lock call ended, for WithObserver (runonce.Outcome).
type Outcome = runonce.Outcome

// The outcomes.
const (
	// Ran: this instance runs the tick.
	Ran = runonce.Ran
	// SkippedHeld: the job's lock was held (ErrLockHeld).
	SkippedHeld = runonce.SkippedHeld
	// SkippedRan: the tick already ran (ErrAlreadyRan).
	SkippedRan = runonce.SkippedRan
	// SkippedYielded: this instance stepped back for another (ErrYielded).
	SkippedYielded = runonce.SkippedYielded
	// Failed: any other error (ZooKeeper unreachable, say): the run is
	// skipped.
	Failed = runonce.Failed
)

// Event is one Lock call, as WithObserver reports it (runonce.Event): the
// job's name (Lock's key), the outcome, the latency from Lock's entry to
// its return, and Lock's error (nil when it ran).
type Event = runonce.Event
