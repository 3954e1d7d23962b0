package cronlock

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"

	"github.com/robfig/cron/v3"

	"github.com/tierlock/tierlock/runonce"
)

// What the Locker tells of the jobs it wraps, robfig/cron's own traps:
// jobs have no names, so a key must come from the wrapper's caller, and a
// job without one must not silently share a key with another. The
// fleet's envelope, which runonce's state shows whatever the scheduler,
// is runonce's to tell.

// nameUse is what the Locker knows of the jobs wrapped under one name:
// the newest of them (the last wrapped) that has ticked, and the last
// wrapped.
type nameUse struct {
	newest uint64
	latest uint64
	told   bool
}

// checkName tells once, loudly, when two jobs of this process share j's
// name: they run as one job. robfig/cron says nothing of a job's end
// (cron.Cron.Remove), so a job replaced under the same name (removed, and
// added again) is told from two jobs by their ticks: a replaced job ticks
// no more once its successor has, where of two jobs both alive the older
// ticks again after the newer's first tick. A replaced job's tick can
// still come late, delayed by a wrapper before the Locker's
// (cron.DelayIfStillRunning); taken for a second job, it would draw a
// false Error and run the removed job after its removal. So, with the
// Cron attached, an older job than the last wrapped under its name, whose
// name has one entry left in the Cron, is the removed one, and its tick
// is not run (TestDelayedReplacedJob).
// checkName reports whether j's tick goes on.
func (l *Locker) checkName(j *locked) bool {
	l.mu.Lock()
	u := l.use(j.name)
	replaced, older := j.seq < u.latest, j.seq < u.newest
	if j.seq > u.newest {
		u.newest = j.seq
	}
	shared := older && !u.told
	l.mu.Unlock()
	if replaced {
		if c := l.cron.Load(); c != nil && removedFrom(c, j) {
			l.log.Debug("a removed job's late tick: not run", "job", j.name)
			return false
		}
	}
	if shared {
		l.mu.Lock()
		shared, u.told = !u.told, true
		l.mu.Unlock()
	}
	if shared {
		l.log.Error("several jobs of this process share one name: they run as one job, one of them per tick; give each job a name of its own",
			"job", j.name)
	}
	return true
}

// use returns the nameUse of name, made on first use, under l.mu.
func (l *Locker) use(name string) *nameUse {
	u := l.names[name]
	if u == nil {
		u = &nameUse{}
		l.names[name] = u
	}
	return u
}

// unnamed returns the job Wrapper makes of a job without a name: it never
// runs it, and tells the observer at each tick; the Error line is said
// once, now (at cron.AddFunc or AddJob).
func (l *Locker) unnamed(job cron.Job) cron.Job {
	what := describe(job)
	l.log.Error("job without a name: not run, since it would share one key with every other job without one; "+
		"give it a name: cron.WithChain(locker.Wrapper()) with AddJob(spec, cronlock.Named(name, job)), or cron.NewChain(locker.Wrap(name)).Then(job); "+
		"put Wrapper last in cron.WithChain, since a wrapper after it hides the name",
		"job", what)
	return &refusedJob{l: l, what: what}
}

// nilJob returns the job Wrapper or Wrap makes of a nil job named name
// (cronlock.Named(name, nil)): it never claims a tick (it would claim the
// fleet's run of each and make none), and tells the observer at each
// tick; the Error line is said once, now (TestNilJobRefused).
func (l *Locker) nilJob(name string) cron.Job {
	err := fmt.Errorf("cronlock: job %q: %w: a nil job, not run", name, runonce.ErrNil)
	l.log.Error("job is nil: not run, and its ticks left to the instances that have it; give Named or Wrap the job itself", "job", name)
	return &refusedJob{l: l, what: name, err: err}
}

// refusedJob is a job refused where it was added (without a name, or
// nil), as Wrapper or Wrap made it: a wrapper of the Locker's met again
// (Wrap's in a Cron with Wrapper) passes it as it is, told once.
type refusedJob struct {
	l    *Locker
	what string
	err  error // ErrUnnamedJob when nil
}

// Run tells the observer of the tick, and runs nothing.
func (j *refusedJob) Run() {
	err := j.err
	if err == nil {
		err = ErrUnnamedJob
	}
	j.l.r.Observe(runonce.Event{Job: j.what, Outcome: runonce.Failed, Err: err})
}

// isNil reports whether job is nil or holds a nil func or pointer (its
// Run would panic).
func isNil(job cron.Job) bool {
	if job == nil {
		return true
	}
	switch v := reflect.ValueOf(job); v.Kind() {
	case reflect.Func, reflect.Pointer:
		return v.IsNil()
	}
	return false
}

// describe names a job for the log: its function's name for a func, its
// type otherwise.
func describe(job cron.Job) string {
	if f, ok := job.(cron.FuncJob); ok && f != nil {
		if fn := runtime.FuncForPC(reflect.ValueOf(f).Pointer()); fn != nil {
			return fn.Name()
		}
	}
	return fmt.Sprintf("%T", job)
}

// refused tells what runonce did not of a tick that did not run (err,
// Do's): a tick Do refused before claiming it, which no log line and no observer heard of. A name that cannot be a
// key (too long, once escaped below the root) is told once per job, and
// to the observer at each tick; a tick after the Locker's Close, once per
// Locker.
func (l *Locker) refused(j *locked, err error) {
	switch {
	case errors.Is(err, runonce.ErrInvalidKey):
		j.told.Do(func() {
			l.log.Error("job name cannot be a key: not run", "job", j.name, "err", err)
		})
		l.r.Observe(runonce.Event{Job: j.name, Outcome: runonce.Failed, Err: err})
	case errors.Is(err, runonce.ErrClosed):
		l.closed.Do(func() {
			l.log.Warn("a job ticked after the Locker's Close: not run; stop the Cron before closing the Locker", "job", j.name)
		})
	}
}
