package gocronlock

import (
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"
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

// Attach lets the Locker read, from s, the scheduled tick of each of its
// jobs' runs (the job's NextRun while Lock runs), so that a tick fired
// more than its window late (a replay of a tick a stopped process slept
// through) is skipped and said so (runonce.ErrStale) rather than run
// again. Call it once the scheduler is made; a Locker serves one
// scheduler. A job is found by its name; one not found, or sharing its
// name with another, is claimed by the Lock's own time, as without
// Attach.
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
}

// rereadEvery bounds how often the jobs are read again for a name not
// found (a job added since).
const rereadEvery = time.Second

// tickOf returns the scheduled time of the run of the job named key that
// Lock decides, fired at now; zero when it cannot tell.
func (l *Locker) tickOf(key string, now time.Time) time.Time {
	j := l.jobs.find(key, now)
	if j == nil {
		return time.Time{}
	}
	next, err := j.NextRun()
	if err != nil || next.IsZero() || next.After(now) {
		// Removed, or already rescheduled (a singleton job's runner):
		// not this run's tick.
		return time.Time{}
	}
	return next
}

// find returns the job named key, reading the scheduler's jobs again
// when it is not known (at most every rereadEvery).
func (sj *schedJobs) find(key string, now time.Time) gocron.Job {
	sj.mu.Lock()
	defer sj.mu.Unlock()
	if sj.s == nil {
		return nil
	}
	if j, ok := sj.byName[key]; ok {
		return j
	}
	if now.Sub(sj.read) < rereadEvery {
		return nil
	}
	sj.read, sj.byName = now, map[string]gocron.Job{}
	for _, j := range sj.s.Jobs() {
		if _, dup := sj.byName[j.Name()]; dup {
			sj.byName[j.Name()] = nil
			continue
		}
		sj.byName[j.Name()] = j
	}
	return sj.byName[key]
}
