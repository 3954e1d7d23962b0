package cronlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// ErrUnnamedJob is the error a job without a name meets at each of its
// ticks (the observer's Event.Err): Wrapper does not run it, since its
// runs would share a key with every other job without one.
var ErrUnnamedJob = errors.New("cronlock: job without a name: not run")

// boundaryHint is robfig/cron's way to start a job on a common boundary,
// for runonce's warning that a job runs more than once per tick.
const boundaryHint = "a spec on the clock, such as \"0 * * * *\" or, with cron.WithSeconds, \"*/10 * * * * *\": " +
	"@every counts from each instance's own start"

// Locker runs robfig/cron jobs once per tick across a fleet: each
// instance schedules every job, and runonce's rule (see the package doc)
// decides which instance runs each tick. Make one per process and session
// with New, and wrap the jobs with Wrapper (cron.WithChain) or Wrap
// (cron.NewChain(...).Then). It is safe for concurrent use.
type Locker struct {
	r   *runonce.Runner
	log *slog.Logger
	seq atomic.Uint64 // numbers the wrapped jobs, in the order they were wrapped

	mu     sync.Mutex
	names  map[string]*nameUse       // check.go
	closed sync.Once                 // a tick after Close told
	cron   atomic.Pointer[cron.Cron] // Attach's (tick.go)
}

// New returns a Locker whose jobs live below root, an absolute ZooKeeper
// path of their own (root/<job>/run and root/<job>/lock, as runonce.New
// says). Every instance of a fleet must use the same root and windows.
// opts are runonce's (runonce.WithWindow, runonce.WithObserver,
// runonce.WithSpread, ...). It logs to the session's logger
// (zklock.WithLogger), with component=cronlock.
func New(s *zklock.Session, root string, opts ...runonce.Option) (*Locker, error) {
	if s == nil {
		return nil, runonce.ErrNilSession
	}
	log := s.Logger().With("component", "cronlock", "root", root)
	own := []runonce.Option{runonce.WithLogger(log), runonce.WithBoundaryHint(boundaryHint)}
	r, err := runonce.New(s, root, append(own, opts...)...)
	if err != nil {
		return nil, err
	}
	return &Locker{r: r, log: log, names: map[string]*nameUse{}}, nil
}

// Named gives job a name, the fleet-wide key of its ticks, for Wrapper:
// cron.Job has none. Give each job of the fleet a name of its own, the
// same on every instance.
func Named(name string, job cron.Job) cron.Job {
	return named{name: name, job: job}
}

// named is a job Named gave a name.
type named struct {
	name string
	job  cron.Job
}

// Run runs the job itself: outside Wrapper, a named job is a plain job.
func (n named) Run() {
	if n.job != nil {
		n.job.Run()
	}
}

// Wrapper returns a cron.JobWrapper for cron.WithChain, which wraps every
// job of the Cron: each tick of a job made with Named runs on one instance
// of the fleet. It refuses to run a job without a name (cron.AddFunc's,
// say): it says so once, at cron.AddFunc or AddJob, in an Error line
// naming the job's function, and tells the observer at each of its ticks
// (ErrUnnamedJob). Put it last in cron.WithChain, so that it sees the job
// itself: a wrapper after it hides the name. A job Wrap has wrapped
// already passes as it is.
func (l *Locker) Wrapper() cron.JobWrapper {
	return func(job cron.Job) cron.Job {
		if l == nil || l.r == nil {
			return nilLocker(job)
		}
		switch j := job.(type) {
		case *locked, *refusedJob:
			return j
		case named:
			if j.name == "" {
				return l.unnamed(j.job)
			}
			w := l.wrap(j.name, j.job)
			if lj, ok := w.(*locked); ok {
				lj.named = true
			}
			return w
		}
		if lockedIn(job) != nil {
			return job // Wrap's, inside a wrapper with an Unwrap method
		}
		return l.unnamed(job)
	}
}

// Wrap returns a cron.JobWrapper that runs the jobs it wraps under name,
// for cron.NewChain(locker.Wrap(name)).Then(job): each tick runs on one
// instance of the fleet. name overrides a name given by Named. An empty
// name is no name: the job is refused, as Wrapper refuses one.
func (l *Locker) Wrap(name string) cron.JobWrapper {
	return func(job cron.Job) cron.Job {
		if l == nil || l.r == nil {
			return nilLocker(job)
		}
		if n, ok := job.(named); ok {
			job = n.job
		}
		if name == "" {
			return l.unnamed(job)
		}
		return l.wrap(name, job)
	}
}

// nilLocker is what the wrappers of a nil Locker (New's error ignored),
// or of one not made by New, make of job: a job that never runs, told once, now, to the default logger.
func nilLocker(job cron.Job) cron.Job {
	slog.Error("cronlock: a nil Locker, or one not made by New, wraps this job: it will never run", "job", describe(job))
	return cron.FuncJob(func() {})
}

// wrap returns job locked under name; a nil job is refused (check.go):
// its ticks would be claimed, the fleet's run of them made by no one. A
// nil func (cron.FuncJob(nil): a handler missing from a map) or a nil
// pointer is a nil job too: run, it would panic in every claim it won
// (TestNilFuncRefused).
func (l *Locker) wrap(name string, job cron.Job) cron.Job {
	if isNil(job) {
		return l.nilJob(name)
	}
	j := &locked{l: l, name: name, job: job, seq: l.seq.Add(1)}
	l.mu.Lock()
	l.use(name).latest = j.seq
	l.mu.Unlock()
	return j
}

// locked is a job whose ticks runonce decides.
type locked struct {
	l    *Locker
	name string
	job  cron.Job
	seq  uint64 // the order it was wrapped in (check.go)
	told sync.Once

	named bool // made by Wrapper of a job Named: its entry is found by its name

	mu     sync.Mutex    // its fires' ticks (tick.go)
	sched  cron.Schedule // its entry's schedule, once read
	prev   time.Time     // its last fire's tick
	every  time.Duration // an @every schedule's period, over a second (tick.go)
	unseen sync.Once     // a fire the Locker cannot name, told (tick.go)
}

// Run is the job's tick: robfig/cron calls it on a goroutine of its own
// when the job's timer fires, and runonce decides at once whether this
// instance runs it.
func (j *locked) Run() {
	if !j.l.checkName(j) {
		return
	}
	ran := false
	err := j.l.claim(j, func() {
		ran = true
		j.job.Run()
	})
	if !ran {
		j.l.refused(j, err)
	}
}

// claim claims the tick of j's fire under way, by its scheduled time when
// the Locker knows it (Attach), and runs fn if this instance runs it,
// releasing the claim when fn returns. When fn panics, the claim is
// failed (the observer hears Failed, never Ran) and the panic goes on to
// the wrappers outside the Locker's (cron.Recover).
func (l *Locker) claim(j *locked, fn func()) error {
	ctx := context.Background()
	var c *runonce.Claim
	var err error
	switch tick, every := l.tickOf(j, time.Now()); {
	case tick.IsZero():
		c, err = l.r.Claim(ctx, j.name)
	case every > 0:
		c, err = l.r.ClaimEvery(ctx, j.name, tick, every)
	default:
		c, err = l.r.ClaimTick(ctx, j.name, tick)
	}
	if err != nil {
		return err
	}
	defer func() {
		if v := recover(); v != nil {
			_ = c.Fail(fmt.Errorf("cronlock: job %q: %w: %v", j.name, runonce.ErrPanicked, v))
			panic(v)
		}
	}()
	fn()
	return c.Release()
}

// LastRun returns the job's last run as its run node records it; the zero
// Run if the job never ran.
func (l *Locker) LastRun(ctx context.Context, name string) (runonce.Run, error) {
	if l == nil {
		return runonce.Run{}, runonce.ErrNil
	}
	return l.r.LastRun(ctx, name)
}

// RemoveJob deletes the nodes of a retired job, one that no instance
// schedules any more, once no attempt of a tick it ran can still decide;
// runonce.ErrJobActive while an instance still schedules it.
// runonce.Runner.RemoveJob says how.
func (l *Locker) RemoveJob(ctx context.Context, name string) error {
	if l == nil {
		return runonce.ErrNil
	}
	return l.r.RemoveJob(ctx, name)
}

// RunContext returns the context of this instance's run of the job named
// name going on now, for the job to watch (robfig/cron gives a job none):
// it is cancelled when the run ends, when the job's lock is lost (the
// cause wraps zklock.ErrLockLost) and when the Locker is closed (the cause
// matches runonce.ErrClosed). Called while this instance has no run of the
// job, it returns a context already cancelled.
func (l *Locker) RunContext(name string) context.Context {
	if l == nil {
		return (*runonce.Runner)(nil).RunContext(name)
	}
	return l.r.RunContext(name)
}

// Close releases the locks of runs still going (their contexts are
// cancelled) and detaches the Locker from its session; later ticks are
// not run. Stop the Cron first (cron.Cron.Stop, and wait for its
// context): a tick after Close is told once as a warning. It leaves the
// run nodes, which the next instances need. Close is idempotent.
func (l *Locker) Close() error {
	if l == nil {
		return runonce.ErrNil
	}
	return l.r.Close()
}
