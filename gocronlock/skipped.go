package gocronlock

import (
	"fmt"
	"slices"
	"time"
)

// Ticks gocron did not fire on this instance. gocron v2.21.2 reschedules
// a job from its last scheduled time when a fire's Lock returns (its
// default mode; before the wait under gocron.LimitModeWait), and a next
// time already past is skipped forward to the first one to come
// (scheduler.go, selectExecJobsOutForRescheduling): a Lock slower than the
// period, or a scheduler goroutine late to reschedule (a loaded process),
// makes gocron fire none of the ticks between. No Lock is made for them,
// and the rule never hears of them: a tick every instance passed over ran
// nowhere, told by none.
//
// The book sees them. Each Lock reads the job's times (gocron's list, then
// those NextRuns computes), and the book keeps the ones to come (ahead):
// at the next Lock, those of them that came, and the listed times that
// came, are the ticks due here. A tick due that no Lock was named by, and
// that no later Lock can be (not among the times the book names fires by:
// gocron no longer lists it and its first time has come, or the book
// named a later one), was not fired here: the Locker hands it to the
// Runner (runonce.Runner.Missed), whose read of the job's record decides
// it once its window and the lock timeout passed (told lost, to the
// observer and in a line, when no instance ran it). So a tick is told at
// the job's next Lock on this instance, or at Close: an instance starved
// of Locks tells nothing until then.
//
// The times ahead are counted only while gocron keeps the schedule the
// book read: its first time came before the last read, or is one of those
// ahead, or comes after them all (then the ticks between the last of them
// and it were not read: the line says how many it could not name). A job
// scheduled from its completion (gocron.WithIntervalFromCompletion) or
// updated is not: its times ahead are forgotten.

// came notes the times due at a read of times at now, before see: those
// ahead of the last read that came, while gocron keeps that schedule, and
// the listed ones that came; and keeps the times to come.
func (b *tickBook) came(times []time.Time, now time.Time) {
	if b.keepsSchedule(times) {
		last := b.ahead[len(b.ahead)-1]
		if len(times) > 0 && times[0].After(last) && !last.After(now) {
			b.unread = true // gocron passed over more than the book read ahead
		}
		for _, t := range b.ahead {
			if !t.After(now) {
				b.due(t)
			}
		}
	}
	b.ahead = b.ahead[:0]
	for _, t := range times {
		switch {
		case !t.After(now):
			b.due(t)
		case len(b.ahead) < readAhead:
			b.ahead = append(b.ahead, t)
		}
	}
	b.read = now
}

// keepsSchedule reports whether times, read now, keep the schedule the
// book read last (see above).
func (b *tickBook) keepsSchedule(times []time.Time) bool {
	if len(b.ahead) == 0 || len(times) == 0 {
		return false
	}
	first := times[0]
	return !first.After(b.read) || slices.ContainsFunc(b.ahead, first.Equal) || first.After(b.ahead[len(b.ahead)-1])
}

// due keeps t, a tick that came, unless a Lock was named by it or by a
// later one, or it is kept already.
func (b *tickBook) due(t time.Time) {
	if !t.After(b.named) {
		return
	}
	i, found := slices.BinarySearchFunc(b.pending, t, time.Time.Compare)
	if !found {
		b.pending = slices.Insert(b.pending, i, t)
	}
	if len(b.pending) > maxFired {
		b.pending = b.pending[len(b.pending)-maxFired:]
		b.unread = true
	}
}

// passed returns the ticks due that no Lock can be named by any more,
// after the Lock named tick (zero: none): the ticks gocron did not fire
// here. The rest stay due.
func (b *tickBook) passed(tick time.Time) []time.Time {
	var out []time.Time
	b.pending = slices.DeleteFunc(b.pending, func(t time.Time) bool {
		switch {
		case t.Equal(tick):
			return true
		case slices.ContainsFunc(b.fired, t.Equal):
			return false // a fire may still be named by it
		}
		out = append(out, t)
		return true
	})
	return out
}

// skipped is what a Lock's book tells of ticks gocron did not fire here:
// the ticks, and why, with the figures.
type skipped struct {
	ticks []time.Time
	why   string
}

// skippedOf returns the ticks the book found passed over at a Lock at now
// that named tick (zero: none), and why.
func (b *tickBook) skippedOf(tick, now time.Time) skipped {
	ticks := b.passed(tick)
	unread := b.unread
	b.unread = false
	if len(ticks) == 0 {
		return skipped{}
	}
	why := fmt.Sprintf("gocron on this instance did not fire them: its scheduler was late (this Lock came %v after the first of them",
		now.Sub(ticks[0]).Round(time.Millisecond))
	if !b.returned.IsZero() && b.returned.After(ticks[0]) {
		why += fmt.Sprintf("; the job's Lock before them returned %v after its tick, and gocron reschedules a job once its fire's Lock returns, skipping the times already past",
			b.returned.Sub(b.returnedOf).Round(time.Millisecond))
	}
	why += ")"
	if unread {
		why += fmt.Sprintf("; more ticks passed over than the %d the Locker reads ahead: those are not named", readAhead)
	}
	return skipped{ticks: ticks, why: why}
}

// noteReturn notes that the job's Lock of tick (its entry when it named
// none) returned at now.
func (b *tickBook) noteReturn(tick, now time.Time) {
	b.returnedOf, b.returned = tick, now
}
