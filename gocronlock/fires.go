package gocronlock

import (
	"slices"
	"time"
)

// Naming a fire by what the Locker saw of its job's schedule.
//
// gocron keeps each job's scheduled times (NextRuns reads them, then
// computes the ones after): a fire's time is appended when the fire
// before it is rescheduled, and stays until a run of the job completes or
// a Lock of it is refused, when gocron drops every time at or before its
// clock. While a fire's Lock runs its time is usually the first, but not
// always:
//
//   - under gocron.WithLimitConcurrentJobs(n, gocron.LimitModeWait) (and a
//     singleton job's wait mode), each fire is rescheduled before it waits
//     in gocron's queue; while the slots are busy a job's fires pile up, and
//     when the first of them is refused or run, gocron drops the times of
//     the ones still waiting;
//   - in gocron's default mode, a run's completion that reaches gocron's
//     scheduler goroutine after the next fire (a loaded instance) drops
//     the next fire's time before its Lock.
//
// Such a fire's Lock finds its time gone, and NextRun ahead of now, as a
// RunNow does. The Locker tells them apart by what it saw at the job's
// earlier Locks: the times it read at or before their read's now (fires
// gocron had made) and the first one after (the fire gocron was about to
// make). A Lock is named by the earliest of those that has come and that
// no Lock was named by; without one, it is a RunNow, claimed by its own
// time, unless gocron's list was empty or a Lock of the job since the last
// one named by gocron's own list was named by a dropped time (a backlog):
// then it may be a queued fire whose time another Lock took, and it is
// not run (runonce.ErrTickUnknown), so that no tick runs twice.

// readAhead is how many of a job's scheduled times a Lock reads first:
// gocron's list (the job's queued fires and its next one) and, past its
// end, the times it computes; a read whose times have all come is read
// again, twice as long, up to maxReadAhead (readTimes).
const (
	readAhead    = 16
	maxReadAhead = 1024
)

// maxFired bounds the times a book keeps: a queue of fires longer than it
// makes the book lose track of its first ones, and then a Lock it cannot
// name is not taken for a RunNow (a backlog).
const maxFired = maxReadAhead

// fireKind is what a Lock of a job is, as its book tells.
type fireKind int

const (
	// fireNamed: a fire of a scheduled time gocron still lists.
	fireNamed fireKind = iota
	// fireDropped: a fire of a scheduled time gocron dropped before its
	// Lock, named by what the book saw.
	fireDropped
	// fireRunNow: no scheduled time came that no Lock was named by: a
	// RunNow, claimed by its own time.
	fireRunNow
	// fireUnnamed: no time to name it by, and it may be a queued fire
	// whose time another Lock took: not run.
	fireUnnamed
	// fireUnseen: no scheduler attached, or the job not found in it:
	// claimed by its own time, told once per job (tick.go).
	fireUnseen
)

// tickBook is what the Locker saw of one job's scheduled times at its
// Locks.
type tickBook struct {
	named   time.Time   // the latest time a Lock was named by
	fired   []time.Time // times that came, after named, no Lock named by yet (ascending)
	next    time.Time   // the first time after its read's now, at the last read of a list
	backlog bool        // the last Lock named was named by a time gocron had dropped
	told    bool        // an unnamed Lock was told at Warn since the last named one

	// The ticks gocron did not fire here (skipped.go).
	ahead      []time.Time // the times to come at the last read, at most readAhead
	read       time.Time   // the last read's now
	pending    []time.Time // ticks that came, no Lock named by yet (ascending)
	unread     bool        // gocron passed over ticks the book did not read
	skipped    skipped     // what the last Lock found passed over
	returned   time.Time   // when the job's last Lock returned
	returnedOf time.Time   // its tick, or its entry when it named none
}

// name returns the tick of a Lock at now whose job's scheduled times,
// read at its entry, are times (gocron's list, then the times it
// computes), and what the Lock is.
func (b *tickBook) name(times []time.Time, now time.Time) (time.Time, fireKind) {
	times = slices.DeleteFunc(times, time.Time.IsZero)
	b.came(times, now)
	tick, kind := b.nameFire(times, now)
	b.skipped = b.skippedOf(tick, now)
	return tick, kind
}

// nameFire is name, once the book noted the ticks due (came).
func (b *tickBook) nameFire(times []time.Time, now time.Time) (time.Time, fireKind) {
	pruned := b.see(times, now)
	if len(b.fired) == 0 {
		if len(times) == 0 || b.backlog {
			return time.Time{}, fireUnnamed
		}
		return time.Time{}, fireRunNow
	}
	t := b.fired[0]
	b.fired, b.named = b.fired[1:], t
	listed := slices.ContainsFunc(times, t.Equal)
	b.backlog = pruned || !listed
	if !b.backlog {
		b.told = false
	}
	if listed {
		return t, fireNamed
	}
	return t, fireDropped
}

// see keeps what a read of times at now shows: the times that came, and
// the next to come (the one gocron was about to fire, when it lists
// none). It reports whether it let go of times that came: those gocron
// no longer lists before its first, which has come, or, past maxFired,
// the earliest it kept.
func (b *tickBook) see(times []time.Time, now time.Time) (pruned bool) {
	upcoming := time.Time{}
	for _, t := range times {
		if t.After(now) {
			upcoming = t
			break
		}
		pruned = b.add(t) || pruned
	}
	if len(times) == 0 {
		// The fire's time may be the one gocron was about to fire.
		if !b.next.IsZero() && !b.next.After(now) {
			pruned = b.add(b.next)
		}
		b.next = time.Time{}
		return pruned
	}
	b.next = upcoming
	if !times[0].After(now) {
		// gocron's first time has come: the times it no longer holds
		// before it will not fire (or their fires were named already).
		for len(b.fired) > 0 && b.fired[0].Before(times[0]) {
			b.fired, pruned = b.fired[1:], true
		}
	}
	return pruned
}

// add keeps t, a time that came, unless a Lock was named by it or by a
// later one; it reports whether it let go of the earliest kept, past
// maxFired.
func (b *tickBook) add(t time.Time) bool {
	if !t.After(b.named) {
		return false
	}
	i, found := slices.BinarySearchFunc(b.fired, t, time.Time.Compare)
	if found {
		return false
	}
	b.fired = slices.Insert(b.fired, i, t)
	if len(b.fired) > maxFired {
		b.fired = b.fired[len(b.fired)-maxFired:]
		return true
	}
	return false
}

// readTimes returns j's scheduled times, read at now: as many as it takes
// to reach one after now, up to maxReadAhead, so that a queue of fires
// longer than readAhead is read whole.
func readTimes(j interface {
	NextRuns(int) ([]time.Time, error)
}, now time.Time) ([]time.Time, error) {
	for n := readAhead; ; n *= 2 {
		times, err := j.NextRuns(n)
		if err != nil || len(times) < n || times[len(times)-1].After(now) || n >= maxReadAhead {
			return times, err
		}
	}
}
