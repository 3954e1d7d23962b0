package runonce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierlock/tierlock/zklock"
)

// A job's state on this instance, and a run of one of its ticks, from the
// Claim that let it go ahead to its Release: its hold of the job's lock,
// and the context a job watches.

// job is the Runner's state for one job key.
type job struct {
	key     string
	lock    *zklock.Lock
	runPath string
	window  time.Duration
	busy    atomic.Bool             // a Claim of this process holds or takes the lock, or RemoveJob does
	wrote   atomic.Bool             // this Runner wrote the job's record (claimer.go)
	removal atomic.Pointer[removal] // a RemoveJob under way (remove.go)
	retired atomic.Bool             // removed: a Claim takes a new entry
	run     atomic.Pointer[Claim]   // the run going on, set by Claim, cleared by Release

	ownNode  string      // the name of this process's last hold's lock node (lost.go), under busy
	lastName int64       // the tick this process last claimed (envelope.go), under busy
	held     heldEpisode // ticks lost to the lock held elsewhere (lost.go), under busy
	after    heldTicks   // an ended episode's ticks still undecided (ticklists.go, heldticks.go), under busy
	missed   missedTicks // ticks the scheduler did not fire here, to decide (ticklists.go, missed.go)

	calls    atomic.Int64 // Claim calls
	warnedAt atomic.Int64 // the last failure warned of (Unix ns)
	checks   checks       // envelope.go
}

// checks is a job's state for the envelope's checks (envelope.go), under
// the job's busy flag: the attempts counted (an unbroken run of this
// instance's decided attempts one tick apart), the run count at their
// start and at the last decided attempt, the period and the spread this
// instance measured, and the strikes.
type checks struct {
	known     bool
	baseRuns  int64     // the runs recorded when the counted attempts began
	ticks     int64     // the counted attempts since
	lastRuns  int64     // the runs recorded after the last decided attempt
	lastCalls int64     // its Claim call's number
	lastAt    time.Time // its tick (ClaimTick) or its entry
	lastRead  time.Time // when its read was answered
	period    time.Duration
	spread    int64 // ms: the largest gap seen from a tick's last run to this instance's timer of the same tick
	sampled   bool  // spread holds a sample
	lost      int
	warned    [5]bool // window, over, lost, ticks closer than the window, an older writer

	toldLate atomic.Bool // overload.go
}

// heldEpisode is a job's episode of ticks lost to its lock held, as this
// instance saw it (lost.go): under the job's busy flag.
type heldEpisode struct {
	node     string    // the holder's lock node; "" none
	name     string    // its instance, as its node names it
	began    time.Time // this instance's first lost tick of it
	runs     int64     // the runs recorded then: one more, and someone ran
	lost     int
	ticks    []int64 // the named ticks lost and not yet decided: shown run (taken back) or let go
	ranAfter int     // ticks taken back
}

// removal is a RemoveJob under way, as the job's Claims of this instance
// see it: they are refused, and seen.
type removal struct {
	once sync.Once
	seen chan struct{} // closed by an attempt of this instance
}

// attempted notes an attempt of this instance during the removal.
func (rm *removal) attempted() { rm.once.Do(func() { close(rm.seen) }) }

// lost is the job lock's loss handler: it cancels the run going on, if
// the hold lost is its. It runs where zklock detects the loss (maybe on
// go-zookeeper's event goroutine) and does not block.
func (j *job) lost(node string, cause error) {
	if c := j.run.Load(); c != nil && c.hold.Node() == node {
		c.cancel(fmt.Errorf("runonce: job %q: %w: %w", j.key, zklock.ErrLockLost, cause))
	}
}

// Claim is this instance's run of one tick of a job: it holds the job's
// lock, so that runs do not overlap, until Release.
type Claim struct {
	j      *job
	hold   *zklock.Hold
	ctx    context.Context // the run's context
	cancel context.CancelCauseFunc
	closed atomic.Bool // Runner.Close released the hold
	done   atomic.Bool
	// What the observer hears of the run when it ends (observe: the
	// Runner's observer, or nil): its Claim's latency, tick and entry;
	// log, the Runner's, tells a lock lost during the run.
	observe     func(Event)
	log         *slog.Logger
	latency     time.Duration
	tick, entry time.Time
}

// Context returns the run's context, for the job to watch: it carries the
// values of the context given to Claim, and it is cancelled when that
// context is, at Release, when the job's lock is lost (the cause wraps
// zklock.ErrLockLost) and when the Runner is closed (the cause matches
// ErrClosed).
func (c *Claim) Context() context.Context {
	if c == nil {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(fmt.Errorf("runonce: %w: nil Claim", zklock.ErrNotHeld))
		return ctx
	}
	return c.ctx
}

// TickOf returns the scheduled time of the tick a run's context (its
// Claim's, RunContext's) runs, as ClaimTick or ClaimEvery was told it,
// and false for a run claimed without one (Claim): a job that processes
// the data of its tick reads it here, where its scheduler does not tell it
// (robfig/cron).
func TickOf(ctx context.Context) (time.Time, bool) {
	if ctx == nil {
		return time.Time{}, false
	}
	t, ok := ctx.Value(tickKey{}).(time.Time)
	return t, ok
}

// tickKey is the key of a run's tick in its context.
type tickKey struct{}

// errRunClosed ends a run whose lock Runner.Close released.
var errRunClosed = fmt.Errorf("%w: the run's lock was released by Close", ErrClosed)

// Release ends the run: it releases the job's lock and cancels the run's
// context. It does not wait for ZooKeeper (the delete goes out in the
// background and is retried until it lands or the session ends), so it
// needs no context and releases whatever the caller's state, a shutdown's
// included. It returns an error matching ErrClosed when Runner.Close
// released the lock during the run, one wrapping zklock.ErrLockLost when
// the lock was lost during the run (logged as a warning too), and
// zklock.ErrNotHeld on a second call.
func (c *Claim) Release() error {
	return c.end(nil)
}

// Fail ends the run as Release does, for a run that failed in a way its
// observer must hear (a job that panicked, cause wrapping ErrPanicked):
// the observer hears Failed with cause, not Ran. The tick stays the
// fleet's run (the other instances skip it, as already run).
func (c *Claim) Fail(cause error) error {
	if cause == nil {
		cause = ErrPanicked
	}
	return c.end(cause)
}

// failOnPanic, deferred around a run, fails c if the run panics, and
// panics on with the same value.
func (c *Claim) failOnPanic() {
	if v := recover(); v != nil {
		_ = c.Fail(fmt.Errorf("runonce: job %q: %w: %v", c.j.key, ErrPanicked, v))
		panic(v)
	}
}

// end ends the run, told to the observer as Ran, or Failed with cause.
func (c *Claim) end(cause error) error {
	if c == nil {
		return ErrNil
	}
	if !c.done.CompareAndSwap(false, true) {
		return fmt.Errorf("runonce: job %q: %w", c.j.key, zklock.ErrNotHeld)
	}
	if c.observe != nil {
		c.observe(Event{Job: c.j.key, Outcome: outcomeOf(cause), Latency: c.latency, Err: cause, Tick: c.tick, Entry: c.entry})
	}
	c.j.run.CompareAndSwap(c, nil)
	if testHookBeforeRelease != nil {
		testHookBeforeRelease()
	}
	err := c.hold.Release()
	c.j.busy.Store(false)
	c.cancel(nil)
	switch {
	case c.closed.Load() || errors.Is(err, zklock.ErrClosed):
		// Close released the lock: it marked the run, or it found the run
		// gone from its job (the CompareAndSwap above) and ended the hold
		// under this Release. Only Close ends a job's lock while a run
		// holds it (RemoveJob's owns the job), so a closed hold is its.
		return fmt.Errorf("runonce: job %q: %w", c.j.key, errRunClosed)
	case err != nil:
		c.log.Warn("lock lost during the run", "job", c.j.key, "err", err)
		return fmt.Errorf("runonce: job %q: %w", c.j.key, err)
	}
	return nil
}

// testHookBeforeRelease, set by tests only, runs in a run's end between
// its removal from the job and its hold's Release.
var testHookBeforeRelease func()
