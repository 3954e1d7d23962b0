package runonce

import (
	"errors"
	"strconv"
	"time"
)

// Outcome is how a Claim call ended, for WithObserver.
type Outcome int

// The outcomes.
const (
	// Ran: this instance runs the tick.
	Ran Outcome = iota
	// SkippedHeld: the job's lock was held (ErrLockHeld): not run here,
	// nor anywhere while the lock is held; lost unless the holder runs it
	// after, which the Runner tells once the lock is free again.
	SkippedHeld
	// SkippedRan: the tick already ran (ErrAlreadyRan).
	SkippedRan
	// SkippedYielded: this instance stepped back for another (ErrYielded).
	SkippedYielded
	// Failed: any other error (ZooKeeper unreachable, say): the run is
	// skipped.
	Failed
	// SkippedStale: the scheduler fired the tick more than its window
	// late (ErrStale, ClaimTick): the fleet ran it.
	SkippedStale
	// SkippedUnknown: a named tick this instance cannot run, whose run
	// the job's record cannot show or rule out (ErrTickUnknown,
	// ClaimTick): the fleet may have run it.
	SkippedUnknown
	// Lost: a tick this instance did not run and handed to Runner.Missed
	// (its scheduler did not fire it, or its claim could not decide it),
	// which the job's record shows no instance ran once its window and the
	// lock timeout passed: lost unless an instance fires it late, which a
	// line tells. Told by the Runner, not by a Claim (missed.go).
	Lost
)

var outcomeNames = [...]string{"ran", "held", "already_ran", "yielded", "failed", "stale", "unknown", "lost"}

// String returns the outcome's name: ran, held, already_ran, yielded,
// failed, stale, unknown or lost (the values of lockmetrics' outcome
// label).
func (o Outcome) String() string {
	if o < 0 || int(o) >= len(outcomeNames) {
		return "Outcome(" + strconv.Itoa(int(o)) + ")"
	}
	return outcomeNames[o]
}

// outcomeOf classifies Claim's error.
func outcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return Ran
	case errors.Is(err, ErrLockHeld):
		return SkippedHeld
	case errors.Is(err, ErrAlreadyRan):
		return SkippedRan
	case errors.Is(err, ErrYielded):
		return SkippedYielded
	case errors.Is(err, ErrStale):
		return SkippedStale
	case errors.Is(err, ErrTickUnknown):
		return SkippedUnknown
	default:
		return Failed
	}
}

// Event is one Claim call, as WithObserver reports it: a run's when it
// ends (Claim.Release: Ran; Claim.Fail: Failed), so that a run that
// panics is never told as run; a skip or a failure when Claim returns.
type Event struct {
	Job     string        // the job's key
	Outcome Outcome       // how it ended
	Latency time.Duration // from Claim's entry to its return
	Err     error         // Claim's error; nil when it ran
	Tick    time.Time     // the tick claimed, as ClaimTick was told it; zero for Claim
	Entry   time.Time     // Claim's entry: the timer's firing, as near as the Runner knows it
}
