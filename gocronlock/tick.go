package gocronlock

import (
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/tierlock/tierlock/runonce"
)

// The tick of a Lock (issue 50, item 7). gocron calls Lock with the job's
// name and nothing that names the tick; when a stopped process resumes,
// each job's timer fires once, late, for the tick it slept through, and
// the rule would run that tick again where the fleet ran it on time.
// gocron keeps the tick, though: while Lock runs, the job's NextRun is the
// scheduled time of the run being decided (gocron reschedules a standard
// job only once Lock has returned). Attach lets the Locker read it, and
// claim each tick with runonce's ClaimTick, which skips a tick more than
// the job's window late (stale) and says so.

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
// jobs' runs (the job's NextRun while Lock runs), so that each tick is
// claimed by its name, and a tick fired more than its window late that
// the fleet ran (a replay of a tick a stopped process slept through) is
// skipped and said so (runonce.ErrStale) rather than run again. Call it
// once the scheduler is made (NewScheduler does); a Locker serves one
// scheduler. A job is found by its name, the scheduler read again for a
// name not known or a job removed since (a job removed and added again
// under its name). A job not found, or sharing its name with another, or
// any job when no scheduler is attached, is claimed by the Lock's own
// time, and told once at Warn: a tick gocron fires late can then run
// twice.
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
}

// rereadEvery bounds how often the jobs are read again for a name not
// found (a job added since).
const rereadEvery = time.Second

// tickOf returns the scheduled time of the run of the job named key that
// Lock decides, fired at now; zero when it cannot tell, told once per job.
func (l *Locker) tickOf(key string, now time.Time) time.Time {
	j, attached := l.jobs.find(key, now, false)
	if j == nil {
		l.unseen(key, attached)
		return time.Time{}
	}
	next, err := j.NextRun()
	if err != nil {
		// Removed: a job added again under its name is another job (issue
		// 56, item 4: its ticks were claimed by the Lock's time).
		if j, _ = l.jobs.find(key, now, true); j == nil {
			return time.Time{}
		}
		next, err = j.NextRun()
	}
	if err != nil || next.IsZero() || next.After(now) {
		// Already rescheduled (a singleton job's runner): not this run's
		// tick.
		return time.Time{}
	}
	return next
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
