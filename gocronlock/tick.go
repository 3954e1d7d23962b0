package gocronlock

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/tierlock/tierlock/runonce"
)

// The tick of a Lock. gocron calls Lock with the job's
// name and nothing that names the tick; when a stopped process resumes,
// each job's timer fires once, late, for the tick it slept through, and
// the rule would run that tick again where the fleet ran it on time.
// gocron keeps the tick, though, among the job's scheduled times, which
// Attach lets the Locker read at each Lock; fires.go names each fire by
// them, also one whose time gocron dropped before its Lock (queued behind
// a concurrency limit, or a completion processed late), and claims it
// with runonce's ClaimTick, which skips a tick more than the job's window
// late (stale) and says so.

// NewScheduler returns gocron.NewScheduler(opts...) with the Locker as
// its distributed locker (gocron.WithDistributedLocker), attached
// (Attach): the short form, and the safe one, a scheduler whose ticks the
// Locker knows.
func (l *Locker) NewScheduler(opts ...gocron.SchedulerOption) (gocron.Scheduler, error) {
	if l == nil {
		return nil, runonce.ErrNil
	}
	s, err := gocron.NewScheduler(append(opts[:len(opts):len(opts)], gocron.WithDistributedLocker(l))...)
	if err != nil {
		return nil, err
	}
	l.Attach(s)
	return s, nil
}

// Attach lets the Locker read, from s, the scheduled tick of each of its
// jobs' runs (the job's scheduled times while Lock runs, and those its
// earlier Locks saw come), so that each tick is claimed by its name, and
// a tick fired more than its window late that
// the fleet ran (a replay of a tick a stopped process slept through) is
// skipped and said so (runonce.ErrStale) rather than run again. Call it
// once the scheduler is made (NewScheduler does); a Locker serves one
// scheduler. A job is found by its name, the scheduler read again for a
// name not known or a job removed since (a job removed and added again
// under its name). A job not found, or sharing its name with another, or
// any job when no scheduler is attached, is claimed by the Lock's own
// time, and told once at Warn: a tick gocron fires late can then run
// twice. Attached, a Lock of no scheduled time that came since the job's
// last Lock is a RunNow, claimed by its own time and told at Info; one
// that may be a queued fire whose time gocron dropped is not run
// (runonce.ErrTickUnknown), told and observed.
func (l *Locker) Attach(s gocron.Scheduler) {
	if l == nil || s == nil {
		return
	}
	l.jobs.mu.Lock()
	defer l.jobs.mu.Unlock()
	l.jobs.s, l.jobs.byName, l.jobs.read = s, nil, time.Time{}
}

// schedJobs is what the Locker knows of its scheduler's jobs.
type schedJobs struct {
	mu     sync.Mutex
	s      gocron.Scheduler
	byName map[string]gocron.Job // nil: not read yet; a name of several jobs maps to nil
	read   time.Time             // when byName was read
	unseen map[string]bool       // the jobs told not found
	books  map[string]*jobBook   // what each job's Locks saw (fires.go)
}

// rereadEvery bounds how often the jobs are read again for a name not
// found (a job added since).
const rereadEvery = time.Second

// fire is what the Locker knows of a Lock's fire: its tick (zero when it
// names none), what the fire is, and whether an unnamed one is told at
// Warn (the first since the job's last fire named by gocron's list).
type fire struct {
	tick    time.Time
	kind    fireKind
	warn    bool
	skipped skipped // ticks gocron did not fire here, found at this Lock (skipped.go)
}

// fireOf returns the fire of the job named key that Lock decides, fired
// at now (fires.go): a fire of no tick when the job is not found, told
// once per job.
func (l *Locker) fireOf(key string, now time.Time) fire {
	j, attached := l.jobs.find(key, now, false)
	if j == nil {
		l.unseen(key, attached)
		return fire{kind: fireUnseen}
	}
	times, err := readTimes(j, now)
	if err != nil {
		// Removed: a job added again under its name is another job, read
		// again so that its ticks are named by its own scheduled times,
		// not claimed by the Lock's time (TestReaddedJobReadAgain).
		if j, _ = l.jobs.find(key, now, true); j == nil {
			return fire{kind: fireUnseen}
		}
		if times, err = readTimes(j, now); err != nil {
			return fire{kind: fireUnseen}
		}
	}
	return l.jobs.name(key, j, times, now)
}

// name names the fire of the job named key, j, at now, whose scheduled
// times are times, by its tick book (fires.go): a new book for a job
// added again under its name. warn is true for the first fire not named
// since the last one named by gocron's list.
func (sj *schedJobs) name(key string, j gocron.Job, times []time.Time, now time.Time) fire {
	sj.mu.Lock()
	defer sj.mu.Unlock()
	if sj.books == nil {
		sj.books = map[string]*jobBook{}
	}
	b := sj.books[key]
	if b == nil || b.job.ID() != j.ID() {
		b = &jobBook{job: j}
		sj.books[key] = b
	}
	f := fire{}
	f.tick, f.kind = b.name(times, now)
	f.skipped = b.skipped
	if f.kind == fireUnnamed {
		f.warn, b.told = !b.told, true
	}
	return f
}

// returned notes that a Lock of the job named key, of f, entered at
// entry, returned at now: the book says how late it returned when
// gocron skips the ticks after it (skipped.go).
func (sj *schedJobs) returned(key string, f fire, entry, now time.Time) {
	sj.mu.Lock()
	defer sj.mu.Unlock()
	if b := sj.books[key]; b != nil {
		of := f.tick
		if of.IsZero() {
			of = entry
		}
		b.noteReturn(of, now)
	}
}

// jobBook is a job's tick book, with the job it is of.
type jobBook struct {
	job gocron.Job
	tickBook
}

// unseen tells once per job that its ticks are claimed by the Lock's
// time: no scheduler attached, or the job not found in it.
func (l *Locker) unseen(key string, attached bool) {
	l.jobs.mu.Lock()
	told := l.jobs.unseen[key]
	if l.jobs.unseen == nil {
		l.jobs.unseen = map[string]bool{}
	}
	l.jobs.unseen[key] = true
	l.jobs.mu.Unlock()
	switch {
	case told:
	case !attached:
		l.log.Warn("a job's tick is locked without its scheduler attached: its ticks are claimed by the Lock's time, and a tick gocron fires late (after a stop) can run twice; make the scheduler with locker.NewScheduler, or call locker.Attach(scheduler)",
			"job", key)
	default:
		l.log.Warn("the Locker cannot find this job in its scheduler (no job of this name, or several): its ticks are claimed by the Lock's time, and a tick gocron fires late can run twice; give each job a name of its own (gocron.WithName)",
			"job", key)
	}
}

// find returns the job named key, reading the scheduler's jobs again
// when it is not known (at most every rereadEvery), or at once when again
// (the job known was removed), and whether a scheduler is attached.
func (sj *schedJobs) find(key string, now time.Time, again bool) (gocron.Job, bool) {
	sj.mu.Lock()
	defer sj.mu.Unlock()
	if sj.s == nil {
		return nil, false
	}
	if j := sj.byName[key]; (j != nil && !again) || (!again && now.Sub(sj.read) < rereadEvery) {
		return j, true
	}
	sj.read, sj.byName = now, map[string]gocron.Job{}
	for _, j := range sj.s.Jobs() {
		if _, dup := sj.byName[j.Name()]; dup {
			sj.byName[j.Name()] = nil
			continue
		}
		sj.byName[j.Name()] = j
	}
	return sj.byName[key], true
}

// claimFire claims f, the fire of the job named key whose Lock entered at
// entry: by its tick when it names one; refused, told and observed, when
// it names none and may be a queued fire whose tick another Lock took;
// otherwise by its own time (a RunNow, told at Info; a job the Locker
// cannot find, told once per job by unseen).
func (l *Locker) claimFire(ctx context.Context, key string, entry time.Time, f fire) (*runonce.Claim, error) {
	switch {
	case f.kind == fireNamed || f.kind == fireDropped:
		if f.kind == fireDropped {
			l.log.Debug("a fire whose scheduled time gocron dropped before its Lock (queued behind a concurrency limit, or its completion late): named by the time the Locker saw come",
				"job", key, "tick", f.tick)
		}
		return l.r.ClaimTick(ctx, key, f.tick)
	case f.kind == fireUnnamed && ctx != nil:
		err := fmt.Errorf("%w: job %q: gocron fired it without a scheduled time the Locker can name (the job's fires queued or late, their times dropped): it may be a fire of a tick the fleet ran, and is not run", runonce.ErrTickUnknown, key)
		lvl := slog.LevelDebug
		if f.warn {
			lvl = slog.LevelWarn
		}
		l.log.Log(ctx, lvl, "a fire without a scheduled time the Locker can name, after fires whose times gocron dropped (queued behind gocron.WithLimitConcurrentJobs's wait, or a run's completion late): not run, so that no tick runs twice (told once until the job's fires are named again)",
			"job", key)
		l.r.Observe(runonce.Event{Job: key, Outcome: runonce.SkippedUnknown, Err: err, Entry: entry, Latency: time.Since(entry)})
		return nil, err
	case f.kind == fireRunNow:
		l.log.Info("a Lock without a scheduled tick (a RunNow): claimed by its own time", "job", key)
	}
	return l.r.Claim(ctx, key)
}
