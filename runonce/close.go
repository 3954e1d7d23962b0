package runonce

import (
	"errors"

	"github.com/tierlock/tierlock/zklock"
)

// isClosed reports whether Close was called.
func (r *Runner) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// Close releases the locks of runs still going (their contexts are
// cancelled, with a cause matching ErrClosed) and detaches the Runner from
// its session; later Claim calls return ErrClosed. A claim in flight
// finishes first (Close waits for it, at most its lock timeout): either it
// has written the run node and runs, released at once, or it leaves the
// tick unmarked and returns ErrClosed. The ticks handed to Missed and not
// decided yet are decided by a read of their jobs' records, within the
// lock timeout (missed.go). Close leaves the run nodes, which
// the next instances need. It is idempotent.
func (r *Runner) Close() error {
	if r == nil {
		return ErrNil
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	// The claims in flight finish first (gate.go): a claim that wrote
	// stores its run before it leaves, so that the loop below finds it.
	r.gate.shut()
	r.missedAtClose()
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, j := range r.jobs {
		// The run learns it first: its Release then says ErrClosed, not a
		// loss, whatever zklock says of the hold Close ends.
		if c := j.run.Load(); c != nil {
			c.closed.Store(true)
			c.cancel(errRunClosed)
		}
		if err := j.lock.Close(); err != nil && !errors.Is(err, zklock.ErrSessionClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
