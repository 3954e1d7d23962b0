package cronlock

import (
	"time"

	"github.com/robfig/cron/v3"
)

// The tick of a fire (issue 50, item 7). robfig/cron v3 on Go 1.23 and
// later fires, when a stopped process resumes, the ticks it slept
// through, each late by the stop, and runs them: a job that processes
// "the data of tick T" would process T twice. A cron.Job is not told its
// tick, but the Cron keeps it: each entry's Prev is the scheduled time of
// its last fire. Attach lets the Locker read it, and claim each tick with
// runonce's ClaimTick, which skips a tick more than the job's window late
// (stale) and says so.
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

// Attach lets the Locker read, from c, the scheduled tick of each fire of
// the jobs it wraps in c (robfig/cron's Entry.Prev), so that a tick fired
// more than its window late (a replay of the ticks a stopped process slept
// through) is skipped and said so (runonce.ErrStale) rather than run
// again. Call it once the Cron is made, before Start; a Locker serves one
// Cron. A job is found by its name (Named, under Wrapper, wherever it
// stands in the chain), or as the job added (Wrap's, outermost in its
// chain, or inside jobs whose types have an Unwrap() cron.Job method); one
// not found is claimed by the Claim's own time, as without Attach.
func (l *Locker) Attach(c *cron.Cron) {
	if l != nil && c != nil {
		l.cron.Store(c)
	}
}

// tickOf returns the scheduled time of j's fire under way, fired at now;
// zero when it cannot tell (no Cron attached, j not found).
func (l *Locker) tickOf(j *locked, now time.Time) time.Time {
	c := l.cron.Load()
	if c == nil {
		return time.Time{}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.sched != nil && !j.prev.IsZero() {
		if next := j.sched.Next(j.prev); !next.After(now) && now.Sub(next) < onTime {
			j.prev = next
			return next
		}
	}
	e, ok := l.entryOf(c, j, now)
	if !ok {
		return time.Time{}
	}
	j.sched, j.prev = e.Schedule, e.Prev
	return e.Prev
}

// entryOf finds j's entry in c: the one whose Job is j itself, or named as
// j; of several (two jobs under one name), the one fired last by now.
func (l *Locker) entryOf(c *cron.Cron, j *locked, now time.Time) (cron.Entry, bool) {
	var found cron.Entry
	ok := false
	for _, e := range c.Entries() {
		if !l.isEntryOf(e, j) || e.Prev.IsZero() || e.Prev.After(now) {
			continue
		}
		if !ok || e.Prev.After(found.Prev) {
			found, ok = e, true
		}
	}
	return found, ok
}

// isEntryOf reports whether e is j's entry: its job is named as j, or is
// j, or wraps j (a job of a type with an Unwrap method returning the job
// it wraps, unwrapped as far as it goes). Comparing a job with j cannot
// panic: j's dynamic type, *locked, is comparable, and an interface
// comparison panics only between equal non-comparable types.
func (l *Locker) isEntryOf(e cron.Entry, j *locked) bool {
	for _, job := range []cron.Job{e.Job, e.WrappedJob} {
		for range 16 { // a bound, should a job unwrap to itself
			if n, ok := job.(named); ok {
				return n.name == j.name
			}
			if job == cron.Job(j) {
				return true
			}
			u, ok := job.(interface{ Unwrap() cron.Job })
			if !ok {
				break
			}
			job = u.Unwrap()
		}
	}
	return false
}

// entriesNamed counts c's entries of jobs named name (Named, or Wrap's).
func entriesNamed(c *cron.Cron, name string) int {
	n := 0
	for _, e := range c.Entries() {
		switch j := e.Job.(type) {
		case named:
			if j.name == name {
				n++
			}
		case *locked:
			if j.name == name {
				n++
			}
		}
	}
	return n
}
