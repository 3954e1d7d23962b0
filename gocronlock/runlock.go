package gocronlock

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/tierlock/tierlock/zklock"
)

// A run, from the Lock that let it go ahead to its Unlock: its hold of the
// job's lock, and the context a job watches (RunContext).

// RunContext returns the context of this instance's run of job going on
// now, for the job to watch: it carries the values of the context gocron
// passed to Lock (the job's own, which a task whose first parameter is a
// context.Context receives too), and it is cancelled when that context
// is, at the run's Unlock, when the run's lock is lost (the cause wraps
// zklock.ErrLockLost) and when the Locker is closed (the cause matches
// ErrClosed). Called while this instance has no run of job, it returns a
// context already cancelled, its cause wrapping zklock.ErrNotHeld.
func (l *Locker) RunContext(job string) context.Context {
	if l != nil {
		l.mu.Lock()
		j := l.jobs[job]
		l.mu.Unlock()
		if j != nil {
			if r := j.run.Load(); r != nil {
				return r.ctx
			}
		}
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(fmt.Errorf("gocronlock: job %q: no run on this instance: %w", job, zklock.ErrNotHeld))
	return ctx
}

// lost is the job lock's loss handler: it cancels the run going on, if
// the hold lost is its. It runs where zklock detects the loss (maybe on
// go-zookeeper's event goroutine) and does not block.
func (j *job) lost(node string, cause error) {
	if r := j.run.Load(); r != nil && r.hold.Node() == node {
		r.cancel(fmt.Errorf("gocronlock: job %q: %w: %w", j.key, zklock.ErrLockLost, cause))
	}
}

// runLock is the gocron.Lock of one run.
type runLock struct {
	l      *Locker
	j      *job
	hold   *zklock.Hold
	ctx    context.Context // the run's context (RunContext)
	cancel context.CancelCauseFunc
	closed atomic.Bool // Locker.Close released the hold
	done   atomic.Bool
}

// Unlock releases the job's lock. It does not wait for ZooKeeper (the
// delete goes out in the background and is retried until it lands or the
// session ends), so it releases also when ctx is already cancelled, as it
// is when gocron shuts down. It returns an error matching ErrClosed when
// Locker.Close released the lock during the run, one wrapping
// zklock.ErrLockLost when the lock was lost during the run, and
// zklock.ErrNotHeld on a second call.
func (r *runLock) Unlock(context.Context) error {
	if r == nil {
		return ErrNil
	}
	if !r.done.CompareAndSwap(false, true) {
		return fmt.Errorf("gocronlock: job %q: %w", r.j.key, zklock.ErrNotHeld)
	}
	r.j.run.CompareAndSwap(r, nil)
	err := r.hold.Release()
	r.j.busy.Store(false)
	r.cancel(nil)
	switch {
	case r.closed.Load():
		return fmt.Errorf("gocronlock: job %q: %w: the run's lock was released by Close", r.j.key, ErrClosed)
	case err != nil:
		r.l.log.Warn("lock lost during the run", "job", r.j.key, "err", err)
		return fmt.Errorf("gocronlock: job %q: %w", r.j.key, err)
	}
	return nil
}
