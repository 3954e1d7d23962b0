package gocronlock

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

var (
	_ gocron.Locker = (*Locker)(nil)
	_ gocron.Lock   = (*runLock)(nil)
)

// Locker is a gocron.Locker on ZooKeeper: each tick of a job runs on one
// instance of the fleet, decided by runonce's rule (see the package doc).
// Make one per process and session with NewLocker and pass it to
// gocron.WithDistributedLocker or gocron.WithDistributedJobLocker. It is
// safe for concurrent use.
type Locker struct {
	r   *runonce.Runner
	log *slog.Logger

	mu   sync.Mutex
	keys map[string]*keyCheck // fleetcheck.go
	jobs schedJobs            // Attach's (tick.go)
}

// NewLocker returns a Locker whose jobs live below root, an absolute
// ZooKeeper path of their own: root/<job>/lock is the job's zklock.Lock and
// root/<job>/run its run node, a persistent node of about 200 bytes per
// job name. Every instance of a fleet must use the same root and windows.
// It logs to the session's logger (zklock.WithLogger), with
// component=gocronlock.
func NewLocker(s *zklock.Session, root string, opts ...runonce.Option) (*Locker, error) {
	if s == nil {
		return nil, runonce.ErrNilSession
	}
	log := s.Logger().With("component", "gocronlock", "root", root)
	own := []runonce.Option{
		runonce.WithLogger(log),
		runonce.WithBoundaryHint("gocron.WithStartAt, or a CronJob"),
	}
	r, err := runonce.New(s, root, append(own, opts...)...)
	if err != nil {
		return nil, err
	}
	return &Locker{r: r, log: log, keys: map[string]*keyCheck{}}, nil
}

// Lock decides whether this instance runs the job named key now: it
// returns a gocron.Lock, held for the run, when it does, and an error
// (runonce.ErrLockHeld, runonce.ErrAlreadyRan or runonce.ErrYielded, matching runonce.ErrSkipped, or a
// failure) when it does not. It returns within the lock timeout
// (runonce.WithLockTimeout), or sooner when ctx ends, and waits for
// another instance only as runonce.Runner.Claim says (a claim of the tick
// under way). ctx is the job's own (gocron's): RunContext derives from it.
func (l *Locker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	if l == nil {
		return nil, runonce.ErrNil
	}
	entry := time.Now()
	f := l.fireOf(key, entry)
	if len(f.skipped.ticks) > 0 {
		// Told once the record decides them: at this Lock's read, or later
		// (runonce.Runner.Missed).
		_ = l.r.Missed(key, f.skipped.ticks, f.skipped.why)
	}
	c, err := l.claimFire(ctx, key, entry, f)
	if f.kind != fireUnseen {
		l.jobs.returned(key, f, entry, time.Now())
	}
	if !f.tick.IsZero() && errors.Is(err, runonce.ErrTickUnknown) {
		// Decided later by the record: lost if no instance ran it.
		_ = l.r.Missed(key, []time.Time{f.tick}, "its claim on this instance could not tell whether the fleet ran it (unknown at its Lock)")
	}
	switch {
	case keyAccepted(err):
		l.checkKey(ctx, key)
	case errors.Is(err, runonce.ErrInvalidKey):
		l.badKey(key, err)
	}
	if err != nil {
		return nil, err
	}
	return &runLock{c: c}, nil
}

// keyAccepted reports whether a Claim that returned err got past its
// arguments (a context, a valid key, a Runner open): then Lock's key is a
// job's that the checks of fleetcheck.go look at.
func keyAccepted(err error) bool {
	for _, e := range []error{runonce.ErrNil, runonce.ErrNilContext, runonce.ErrInvalidKey, runonce.ErrClosed} {
		if errors.Is(err, e) {
			return false
		}
	}
	return true
}

// runLock is the gocron.Lock of one run: runonce's Claim.
type runLock struct {
	c *runonce.Claim
}

// Unlock releases the job's lock. It does not wait for ZooKeeper (the
// delete goes out in the background and is retried until it lands or the
// session ends), so it releases also when ctx is already cancelled, as it
// is when gocron shuts down. It returns an error matching runonce.ErrClosed when
// Locker.Close released the lock during the run, one wrapping
// zklock.ErrLockLost when the lock was lost during the run, and
// zklock.ErrNotHeld on a second call.
func (r *runLock) Unlock(context.Context) error {
	if r == nil {
		return runonce.ErrNil
	}
	return r.c.Release()
}

// RunContext returns the context of this instance's run of job going on
// now, for the job to watch: it carries the values of the context gocron
// passed to Lock (the job's own, which a task whose first parameter is a
// context.Context receives too), and it is cancelled when that context
// is, at the run's Unlock, when the run's lock is lost (the cause wraps
// zklock.ErrLockLost) and when the Locker is closed (the cause matches
// runonce.ErrClosed). Called while this instance has no run of job, it returns a
// context already cancelled, its cause wrapping zklock.ErrNotHeld.
func (l *Locker) RunContext(job string) context.Context {
	if l == nil {
		return (*runonce.Runner)(nil).RunContext(job)
	}
	return l.r.RunContext(job)
}

// LastRun returns the job's last run as its run node records it; the zero
// Run if the job never ran (the node does not exist).
func (l *Locker) LastRun(ctx context.Context, key string) (runonce.Run, error) {
	if l == nil {
		return runonce.Run{}, runonce.ErrNil
	}
	return l.r.LastRun(ctx, key)
}

// RemoveJob deletes the nodes of a retired job, one that no instance
// schedules any more, once no attempt of a tick it ran can still decide;
// runonce.ErrJobActive while an instance still schedules it, runonce.ErrLockHeld while a
// run holds its lock. runonce.Runner.RemoveJob says how.
func (l *Locker) RemoveJob(ctx context.Context, key string) error {
	if l == nil {
		return runonce.ErrNil
	}
	return l.r.RemoveJob(ctx, key)
}

// Close releases the locks of runs still going and detaches the Locker
// from its session; later Lock calls return runonce.ErrClosed. It leaves the run
// nodes, which the next instances need. Close is idempotent.
func (l *Locker) Close() error {
	if l == nil {
		return runonce.ErrNil
	}
	return l.r.Close()
}
