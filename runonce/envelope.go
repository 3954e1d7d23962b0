package runonce

import (
	"fmt"
	"time"

	"github.com/tierlock/tierlock/internal/runrec"
)

// The checks that tell a fleet it is outside the rule's envelope, once per
// job, from what the rule's own state shows (each job's, checks, under its
// busy flag), where a misconfigured fleet would only lose ticks or run
// them twice, silently; and what a named tick shows of the hosts' clocks.

// checkEnvelope looks at a decided attempt (d) of this instance, made at
// its calls-th Claim of the job (p), and says once per kind when the
// fleet is outside the envelope S < W <= P - S. Inside it, each of this
// instance's attempts reads the record after its tick's run, or makes
// the run, so:
//
//   - over attempts one tick apart, the runs the record counts grow by at
//     most one per attempt, give or take one at the ends: more means
//     ticks run more than once;
//   - its first attempt of a tick (no run by another since its last one,
//     a tick ago) runs: a skip there, twice, means ticks are late or lost.
//
// Only the ticks this instance saw count (once, after a stop,
// the runs made while it slept counted against the ticks it did not see,
// and nearly every job was told it ran more than once per tick): an
// attempt counts when the one before it was its last Claim of the job and
// came one period before (its tick, with ClaimTick, or its entry), the
// period being the shortest gap seen, within half of it, and its read too
// (a Claim stopped between its entry and its read reads the runs made
// while it slept); any other gap starts the count afresh.
func (t *reporter) checkEnvelope(j *job, d decision, calls int64, p *probe) {
	c, w := &j.checks, ms(p.window)
	t.checkWindow(j, d, w)
	t.checkWriter(j, d)
	at := p.tick
	if at.IsZero() {
		at = p.entry
	}
	if !c.counts(d, calls, at) {
		// A new node, or a gap: count afresh from here.
		c.known, c.baseRuns, c.ticks = true, d.read.last.Runs, 0
	} else {
		c.ticks++
		c.measure(d)
		named := d.basis == byNames
		if named {
			t.checkNamedOver(j, d, w)
		} else {
			t.checkOver(j, d, w)
		}
		// A named tick's skip says its tick ran (tick.go tells the rest).
		if d.read.last.Runs == c.lastRuns && d.verdict == runrec.Skip && !d.wrote.steppedBack && !named {
			if c.lost++; c.lost == 2 && !c.warned[2] {
				c.warned[2] = true
				t.firstSkipped(j, d, w)
			}
		}
	}
	c.lastRuns, c.lastCalls, c.lastAt, c.lastRead = d.read.last.Runs, calls, at, d.read.at
	if d.verdict == runrec.Run {
		c.lastRuns++
	}
}

// counts reports whether d, at its calls-th Claim, the tick or entry at,
// is one tick after the last decided attempt, and notes the period.
func (c *checks) counts(d decision, calls int64, at time.Time) bool {
	if !c.known || d.basis == firstRun || d.read.last.Runs < c.lastRuns || calls-c.lastCalls != 1 {
		return false
	}
	gap := at.Sub(c.lastAt)
	if gap <= 0 {
		return false
	}
	if c.period == 0 || gap < c.period {
		c.period = gap
	}
	return gap <= c.period*3/2 && d.read.at.Sub(c.lastRead) <= c.period*3/2
}

// measure keeps the spread d shows: the gap from the last run to this
// attempt's timer, when under half the period (the same tick).
func (c *checks) measure(d decision) {
	if d.sinceLast >= 0 && d.sinceLast < c.period.Milliseconds()/2 {
		c.spread, c.sampled = max(c.spread, d.sinceLast), true
	}
}

// checkOver warns once when the counted attempts saw more runs than
// ticks, give or take one; w is the job's window (ms).
func (t *reporter) checkOver(j *job, d decision, w int64) {
	c := &j.checks
	runs := d.read.last.Runs - c.baseRuns
	if runs <= c.ticks+1 || c.warned[1] {
		return
	}
	c.warned[1] = true
	what := "the job runs more than once per tick"
	if t.over.overloaded(j.window) {
		t.over.tellLate(j, what)
		return
	}
	spread, rtt := msDuration(c.spread), t.late.rttP99()
	room := c.period - spread - 2*rtt
	var advice string
	switch {
	case !c.sampled:
		advice = "this instance measured no spread (its attempts never followed a run of their own tick by less than half the period): start the job on a common boundary" + t.hint()
	case spread >= room:
		advice = "no window can do (S < W <= P - S - 2r has no solution for the spread and the period measured): start the job on a common boundary" + t.hint()
	default:
		advice = fmt.Sprintf("widen the window to between %v and %v (the spread and the period measured here, less two write round trips), or start the job on a common boundary%s",
			spread, room.Round(time.Millisecond), t.hint())
	}
	t.log.Warn(what+": the fleet's timers for it are further apart than its window; "+advice,
		"job", j.key, "runs", runs, "ticks", c.ticks, "window", msDuration(w),
		"spread_measured", spread, "period_measured", c.period.Round(time.Millisecond), "write_rtt_p99", rtt)
}

// checkNamedOver warns once when the ticks run, by their names, are more
// than one per period this instance measured: the ticks the run node
// keeps (up to eight) outnumber their span's periods by more than one,
// where ticks named alike are a period apart, give or take the spread of
// their names. Then the job's ticks are not named alike across the fleet
// (each instance's own phase), and it runs more than once per period.
// Counting runs, as checkOver does, would take the runs of two ticks in
// one second (a tick an instance whose clock is ahead passed over, run
// when another came to it) for a tick run twice.
func (t *reporter) checkNamedOver(j *job, d decision, w int64) {
	c := &j.checks
	n := len(d.read.last.Ticks)
	if c.warned[1] || c.period <= 0 || n < 4 {
		return
	}
	span := msDuration(d.read.last.Ticks[0] - d.read.last.Ticks[n-1])
	if float64(n-1) <= float64(span)/float64(c.period)+1 {
		return
	}
	c.warned[1] = true
	t.log.Warn("the job runs more than once per tick: its ticks are not named alike across the fleet (each instance's own phase: an interval counted from each instance's start); start the job on a common boundary"+t.hint(),
		"job", j.key, "runs", n, "over", span.Round(time.Millisecond), "period_measured", c.period.Round(time.Millisecond), "window", msDuration(w))
}

// firstSkipped tells first attempts of a tick that skip: overload, when
// this instance is late, or a window too wide for the job's period (w,
// ms).
func (t *reporter) firstSkipped(j *job, d decision, w int64) {
	what := "the job's first attempt of a tick found its last run less than a window old: ticks are late or lost"
	if d.sinceLast < 0 {
		// A run dated after this attempt's timer: not the window's doing.
		t.log.Warn("the job's first attempt of a tick found a run dated after its own timer: a clock jump, or this process stalled between its timer and its write",
			"job", j.key, "run_after_timer_by", msDuration(-d.sinceLast))
		return
	}
	if t.over.overloaded(j.window) {
		t.over.tellLate(j, what)
		return
	}
	t.log.Warn(what+"; the window must not exceed the job's period less the fleet's spread",
		"job", j.key, "since_last_run", msDuration(d.sinceLast), "window", msDuration(w))
}

// checkWindow warns once if the run node's last writer had another window
// than this instance's, w (ms).
func (t *reporter) checkWindow(j *job, d decision, w int64) {
	c := &j.checks
	if other := d.read.last.Window; other > 0 && other != w && !c.warned[0] {
		c.warned[0] = true
		what := "the fleet's windows differ for this job: ticks are lost or run twice; give every instance the same window (WithWindow, WithJobWindow)"
		if d.basis == byNames {
			what = "the fleet's windows differ for this job: its ticks claimed by their names still run once, but a claim without a tick (RunNow, a scheduler not attached) can lose a tick or run one twice; give every instance the same window (WithWindow, WithJobWindow)"
		}
		t.log.Warn(what,
			"job", j.key, "window", msDuration(w), "other_window", msDuration(other), "other", d.read.last.Writer)
	}
}

// checkWriter warns once if the run node's last writer is of an older
// version, which keeps no tick names: the runs it makes leave none, so
// that a named tick after one is decided by the server's clock too, and
// every tick before it is let go (runrec's Verdict): a tick of those that
// no instance ran is not run.
func (t *reporter) checkWriter(j *job, d decision) {
	c := &j.checks
	if d.read.last.Old && !c.warned[4] {
		c.warned[4] = true
		t.log.Warn("an instance of an older version writes this job's run node: the runs it makes keep no tick name, so the ticks before each of them are let go (none runs twice; one no instance ran may be lost); upgrade it",
			"job", j.key, "other", d.read.last.Writer)
	}
}

// hint is WithBoundaryHint's text, in parentheses, or nothing.
func (t *reporter) hint() string {
	if t.boundary == "" {
		return ""
	}
	return " (" + t.boundary + ")"
}

// checkNames tells what p's named tick of j (w its window, ms) shows of
// the fleet's setting by the record read (last), once each: the hosts'
// clocks differ (an instance ran a later tick before this one fired, on
// time by this host's clock), or the job's ticks are closer than its
// window (its last tick here less than a window before this one).
func (t *reporter) checkNames(j *job, p *probe, last runrec.Last, w int64) {
	ahead := last.Latest() - p.name
	level := int32(1)
	what := "the hosts' clocks differ: another instance ran a later tick of this job before this instance's tick fired, on time by this host's clock; each tick still runs once (by its name), but keep the hosts' clocks in step (NTP): RemoveJob and the claims without a tick count on it"
	if !last.Open(p.name, w) && !last.RanTick(p.name, w) {
		level = 2
		what = "the hosts' clocks differ by more than the job's record keeps: another instance ran later ticks of this job before this instance's tick fired, on time by this host's clock, and the record no longer names the runs of ticks this old, so this instance cannot tell whether they ran and runs none (ticks unknown); keep the hosts' clocks in step (NTP)"
	}
	if level == 1 && t.toldAhead.Load() == 2 {
		// Told, naming the clocks (clocks.go).
		level = 0
	}
	if told := t.toldClocks.Load(); p.lateBy == 0 && ahead >= w && told < level && t.toldClocks.CompareAndSwap(told, level) {
		t.log.Warn(what, "job", j.key, "tick", tickString(p.name), "latest_tick_run", tickString(last.Latest()), "by", last.By, "ahead_by_at_least", msDuration(ahead))
	}
	if gap := p.name - j.lastName; j.lastName != 0 && gap > 0 && gap < w && !j.checks.warned[3] {
		j.checks.warned[3] = true
		t.log.Warn("the job's ticks are closer than its window: a tick within a window of a run is taken for it, and does not run; the window must be below the job's period (WithWindow, WithJobWindow)",
			"job", j.key, "ticks_apart", msDuration(gap), "window", msDuration(w))
	}
	j.lastName = p.name
}
