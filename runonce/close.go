package runonce

import (
	"errors"

	"github.com/tierlock/tierlock/zklock"
)

// A Close and the claims in flight. A claim's write of
// the run node counts as the tick's run for every instance; were Close to
// end the job's lock between that write and the claim's take of the lock,
// the tick would run nowhere. So a claim about to write enters (writing
// is refused once Close has begun: the tick is left unmarked, ErrClosed),
// and Close waits for the claims that entered to finish (their runs
// stored, or their failure returned) before it ends the locks: a claim in
// flight at Close either finishes, writes and runs (its run then released
// by Close, its context cancelled with ErrClosed), or leaves the tick to
// the others.

// enter admits p's claim to writing, once; ErrClosed after Close.
func (r *Runner) enter(p *probe) error {
	if p.entered {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errClaimClosed
	}
	// Under r.mu with closed false: before Close's Wait (happens-before
	// through r.mu), so that Wait counts it.
	r.claims.Add(1)
	p.entered = true
	return nil
}

// leave ends p's claim's writing, if it entered.
func (r *Runner) leave(p *probe) {
	if p.entered {
		p.entered = false
		r.claims.Done()
	}
}

// errClaimClosed ends a claim that Close found before its write.
var errClaimClosed = errors.Join(ErrClosed, errors.New("the tick is left to the other instances"))

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
// tick unmarked and returns ErrClosed. Close leaves the run nodes, which
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
	r.claims.Wait()
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
