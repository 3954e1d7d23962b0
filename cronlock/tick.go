package cronlock

import (
	"time"

	"github.com/robfig/cron/v3"
)

// The tick of a fire. robfig/cron v3 on Go 1.23 and
// later fires, when a stopped process resumes, the ticks it slept
// through, each late by the stop; cron.DelayIfStillRunning fires a tick
// when the run before it ends. A cron.Job is not told its tick, but the
// Cron keeps it: each entry's Prev is the scheduled time of its last
// fire. Attach lets the Locker read it, and claim each tick by it with
// runonce's ClaimTick: the rule compares ticks by their names, so that a
// tick runs once whatever the clocks, and a late one the fleet ran is
// skipped (stale).
//
// Reading it costs a snapshot of the Cron's entries (robfig/cron copies
// them all, through its run loop), so it is read only when needed: after
// a fire on time, the next fire's tick is the schedule's next time after
// it, and a fire within onTime of that is on time (its tick no later than
// the fire, no earlier than that time); any other fire, and a job's first,
// reads the entries.

// onTime is how late after the schedule's next time a fire is taken for
// its tick without reading the Cron's entries.
const onTime = 100 * time.Millisecond

// WithChain returns a cron.Option for cron.New: the Cron's chain is
// wrappers followed by the Locker's Wrapper (last, so that it sees each
// job and its name), and the Cron is attached (Attach). It is the short
// form, and the safe one: a Cron made with it cannot run its jobs without
// the Locker knowing their ticks.
//
//	c := cron.New(cron.WithSeconds(), locker.WithChain(cron.Recover(logger)))
//	c.AddJob("0 */5 * * * *", cronlock.Named("invoices", job))
func (l *Locker) WithChain(wrappers ...cron.JobWrapper) cron.Option {
	return func(c *cron.Cron) {
		cron.WithChain(append(wrappers[:len(wrappers):len(wrappers)], l.Wrapper())...)(c)
		l.Attach(c)
	}
}

// Attach lets the Locker read, from c, the scheduled tick of each fire of
// the jobs it wraps in c (robfig/cron's Entry.Prev), so that each tick is
// claimed by its name, and a tick fired more than its window late that
// the fleet ran (a replay of the ticks a stopped process slept through)
// is skipped and said so (runonce.ErrStale) rather than run again. Call
// it once the Cron is made, before Start; a Locker serves one Cron
// (WithChain makes the Cron attached). A job is found by its name (Named,
// under Wrapper, wherever it stands in the chain), or as the job added
// (Wrap's, outermost in its chain, or inside jobs whose types have an
// Unwrap() cron.Job method). A job not found, or any job when no Cron is
// attached, is claimed by the Claim's own time, and told once at Warn: a
// tick it fires late can then run twice.
func (l *Locker) Attach(c *cron.Cron) {
	if l != nil && c != nil {
		l.cron.Store(c)
	}
}

// tickOf returns the scheduled time of j's fire under way, fired at now,
// and the period of an @every schedule over a second (whose ticks are
// each instance's own: runonce.ClaimEvery); a zero time when it cannot
// tell (no Cron attached, j not found), told once per job.
func (l *Locker) tickOf(j *locked, now time.Time) (time.Time, time.Duration) {
	c := l.cron.Load()
	if c == nil {
		j.unseen.Do(func() {
			l.log.Warn("a job fires from a Cron the Locker cannot read (no Attach): its ticks are claimed by the claim's time, and a tick robfig/cron fires late (after a stop) can run twice; make the Cron with cron.New(..., locker.WithChain(...)), or call locker.Attach(c)",
				"job", j.name)
		})
		return time.Time{}, 0
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.sched != nil && !j.prev.IsZero() {
		if next := j.sched.Next(j.prev); !next.After(now) && now.Sub(next) < onTime {
			j.prev = next
			return next, j.every
		}
	}
	e, ok := l.entryOf(c, j, now)
	if !ok {
		j.unseen.Do(func() {
			l.log.Warn("the Locker cannot find this job in its Cron (a wrapper outside the Locker's hides it, cron.Recover around Wrap say): its ticks are claimed by the claim's time, and a tick robfig/cron fires late can run twice; put the Locker's wrapper last in the chain (locker.WithChain), or give the wrapper an Unwrap() cron.Job method",
				"job", j.name)
		})
		return time.Time{}, 0
	}
	j.sched, j.prev, j.every = e.Schedule, e.Prev, 0
	if d, ok := e.Schedule.(cron.ConstantDelaySchedule); ok && d.Delay > time.Second {
		j.every = d.Delay
	}
	return e.Prev, j.every
}

// entryOf finds j's entry in c: the one whose Job is j itself, or named as
// j; of several (two jobs under one name), the one fired last by now.
func (l *Locker) entryOf(c *cron.Cron, j *locked, now time.Time) (cron.Entry, bool) {
	var found cron.Entry
	ok := false
	for _, e := range c.Entries() {
		if !isEntryOf(e, j) || e.Prev.IsZero() || e.Prev.After(now) {
			continue
		}
		if !ok || e.Prev.After(found.Prev) {
			found, ok = e, true
		}
	}
	return found, ok
}

// isEntryOf reports whether e is j's entry: its job is named as j, or is
// j, or wraps j.
func isEntryOf(e cron.Entry, j *locked) bool {
	for _, job := range []cron.Job{e.Job, e.WrappedJob} {
		if n, ok := job.(named); ok {
			return n.name == j.name
		}
		if lockedIn(job) == j {
			return true
		}
	}
	return false
}

// lockedIn returns the job Wrap made that job is or wraps (a job of a type
// with an Unwrap method returning the job it wraps, unwrapped as far as it
// goes), nil if none. Comparing jobs cannot panic: it is a type switch.
func lockedIn(job cron.Job) *locked {
	for range 16 { // a bound, should a job unwrap to itself
		if lj, ok := job.(*locked); ok {
			return lj
		}
		u, ok := job.(interface{ Unwrap() cron.Job })
		if !ok {
			return nil
		}
		job = u.Unwrap()
	}
	return nil
}

// removedFrom reports whether j is a job removed from c (cron.Cron.Remove)
// whose tick comes late (cron.DelayIfStillRunning before the Locker's
// wrapper): the Cron holds a newer job of its name and not j. A job
// Wrapper made of a Named one is found by its name: fewer entries of the
// name than jobs wrapped under it. A job hidden from the Cron's readers
// (cron.Recover around Wrap) cannot be told removed: it goes on, since
// taking it for removed would lose the older one's ticks where two
// schedules of one name are each so wrapped (TestOneNameTwoSchedules).
func removedFrom(c *cron.Cron, j *locked) bool {
	names, newer := 0, false
	for _, e := range c.Entries() {
		if n, ok := e.Job.(named); ok {
			if n.name == j.name {
				names++
			}
			continue
		}
		switch lj := lockedIn(e.Job); {
		case lj == j:
			return false
		case lj != nil && lj.name == j.name && lj.seq > j.seq:
			newer = true
		}
	}
	return newer || (j.named && names < 2)
}
