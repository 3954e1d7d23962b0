package runonce

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tierlock/tierlock/zklock"
)

// A run, from the Claim that let it go ahead to its Release: its hold of
// the job's lock, and the context a job watches.

// Claim is this instance's run of one tick of a job: it holds the job's
// lock, so that runs do not overlap, until Release.
type Claim struct {
	r      *Runner
	j      *job
	hold   *zklock.Hold
	ctx    context.Context // the run's context
	cancel context.CancelCauseFunc
	closed atomic.Bool // Runner.Close released the hold
	done   atomic.Bool
	// What the observer hears of the run when it ends: its Claim's
	// latency, tick and entry.
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
	c.r.Observe(Event{Job: c.j.key, Outcome: outcomeOf(cause), Latency: c.latency, Err: cause, Tick: c.tick, Entry: c.entry})
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
		c.r.log.Warn("lock lost during the run", "job", c.j.key, "err", err)
		return fmt.Errorf("runonce: job %q: %w", c.j.key, err)
	}
	return nil
}

// RunContext returns the context of this instance's run of the job named
// key going on now (Claim.Context), for a job that cannot be handed its
// Claim (a scheduler's task). Called while this instance has no run of
// the job, it returns a context already cancelled, its cause wrapping
// zklock.ErrNotHeld.
func (r *Runner) RunContext(key string) context.Context {
	if r != nil {
		r.mu.Lock()
		j := r.jobs[key]
		r.mu.Unlock()
		if j != nil {
			if c := j.run.Load(); c != nil {
				return c.ctx
			}
		}
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(fmt.Errorf("runonce: job %q: no run on this instance: %w", key, zklock.ErrNotHeld))
	return ctx
}

// lost is the job lock's loss handler: it cancels the run going on, if
// the hold lost is its. It runs where zklock detects the loss (maybe on
// go-zookeeper's event goroutine) and does not block.
func (j *job) lost(node string, cause error) {
	if c := j.run.Load(); c != nil && c.hold.Node() == node {
		c.cancel(fmt.Errorf("runonce: job %q: %w: %w", j.key, zklock.ErrLockLost, cause))
	}
}
