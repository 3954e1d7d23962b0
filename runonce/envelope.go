package runonce

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tierlock/tierlock/internal/runrec"
)

// The checks that tell a fleet it is outside the rule's envelope, once per
// job: what the rule's own state shows, where
// today a misconfigured fleet only loses ticks or runs them twice,
// silently.

// checks is a job's state for them, under the job's busy flag: the
// attempts counted (an unbroken run of this instance's decided attempts
// one tick apart), the run count at their start and at the last decided
// attempt, the period and the spread this instance measured, and the
// strikes.
type checks struct {
	known     bool
	baseRuns  int64     // the runs recorded when the counted attempts began
	ticks     int64     // the counted attempts since
	lastRuns  int64     // the runs recorded after the last decided attempt
	lastCalls int64     // its Claim call's number
	lastAt    time.Time // its tick (ClaimTick) or its entry
	lastRead  time.Time // when its read was answered
	period    time.Duration
	spread    int64 // ms: the largest gap seen from a tick's last run to this instance's timer of the same tick
	sampled   bool  // spread holds a sample
	lost      int
	warned    [5]bool // window, over, lost, ticks closer than the window (tick.go), an older writer

	toldLate atomic.Bool // overload.go
}

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
func (r *Runner) checkEnvelope(j *job, d decision, calls int64, p *probe) {
	c := &j.checks
	r.checkWindow(j, d)
	r.checkWriter(j, d)
	at := p.tick
	if at.IsZero() {
		at = p.entry
	}
	if !c.counts(d, calls, at) {
		// A new node, or a gap: count afresh from here.
		c.known, c.baseRuns, c.ticks = true, d.prev.Runs, 0
	} else {
		c.ticks++
		c.measure(d)
		if d.named {
			r.checkNamedOver(j, d)
		} else {
			r.checkOver(j, d)
		}
		// A named tick's skip says its tick ran (tick.go tells the rest).
		if d.prev.Runs == c.lastRuns && d.verdict == runrec.Skip && !d.yielded && !d.named {
			if c.lost++; c.lost == 2 && !c.warned[2] {
				c.warned[2] = true
				r.firstSkipped(j, d)
			}
		}
	}
	c.lastRuns, c.lastCalls, c.lastAt, c.lastRead = d.prev.Runs, calls, at, d.readAt
	if d.verdict == runrec.Run {
		c.lastRuns++
	}
}

// counts reports whether d, at its calls-th Claim, the tick or entry at,
// is one tick after the last decided attempt, and notes the period.
func (c *checks) counts(d decision, calls int64, at time.Time) bool {
	if !c.known || d.first || d.prev.Runs < c.lastRuns || calls-c.lastCalls != 1 {
		return false
	}
	gap := at.Sub(c.lastAt)
	if gap <= 0 {
		return false
	}
	if c.period == 0 || gap < c.period {
		c.period = gap
	}
	return gap <= c.period*3/2 && d.readAt.Sub(c.lastRead) <= c.period*3/2
}

// measure keeps the spread d shows: the gap from the last run to this
// attempt's timer, when under half the period (the same tick).
func (c *checks) measure(d decision) {
	if d.sinceLast >= 0 && d.sinceLast < c.period.Milliseconds()/2 {
		c.spread, c.sampled = max(c.spread, d.sinceLast), true
	}
}

// checkOver warns once when the counted attempts saw more runs than
// ticks, give or take one.
func (r *Runner) checkOver(j *job, d decision) {
	c := &j.checks
	runs := d.prev.Runs - c.baseRuns
	if runs <= c.ticks+1 || c.warned[1] {
		return
	}
	c.warned[1] = true
	what := "the job runs more than once per tick"
	if r.overloaded(j.window) {
		r.tellLate(j, what)
		return
	}
	spread, rtt := msDuration(c.spread), r.late.rttP99()
	room := c.period - spread - 2*rtt
	var advice string
	switch {
	case !c.sampled:
		advice = "this instance measured no spread (its attempts never followed a run of their own tick by less than half the period): start the job on a common boundary" + r.hint()
	case spread >= room:
		advice = "no window can do (S < W <= P - S - 2r has no solution for the spread and the period measured): start the job on a common boundary" + r.hint()
	default:
		advice = fmt.Sprintf("widen the window to between %v and %v (the spread and the period measured here, less two write round trips), or start the job on a common boundary%s",
			spread, room.Round(time.Millisecond), r.hint())
	}
	r.log.Warn(what+": the fleet's timers for it are further apart than its window; "+advice,
		"job", j.key, "runs", runs, "ticks", c.ticks, "window", msDuration(d.rec.Window),
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
func (r *Runner) checkNamedOver(j *job, d decision) {
	c := &j.checks
	n := len(d.prev.Ticks)
	if c.warned[1] || c.period <= 0 || n < 4 {
		return
	}
	span := msDuration(d.prev.Ticks[0] - d.prev.Ticks[n-1])
	if float64(n-1) <= float64(span)/float64(c.period)+1 {
		return
	}
	c.warned[1] = true
	r.log.Warn("the job runs more than once per tick: its ticks are not named alike across the fleet (each instance's own phase: an interval counted from each instance's start); start the job on a common boundary"+r.hint(),
		"job", j.key, "runs", n, "over", span.Round(time.Millisecond), "period_measured", c.period.Round(time.Millisecond), "window", msDuration(d.rec.Window))
}

// firstSkipped tells first attempts of a tick that skip: overload, when
// this instance is late, or a window too wide for the job's period.
func (r *Runner) firstSkipped(j *job, d decision) {
	what := "the job's first attempt of a tick found its last run less than a window old: ticks are late or lost"
	if d.sinceLast < 0 {
		// A run dated after this attempt's timer: not the window's doing.
		r.log.Warn("the job's first attempt of a tick found a run dated after its own timer: a clock jump, or this process stalled between its timer and its write",
			"job", j.key, "run_after_timer_by", msDuration(-d.sinceLast))
		return
	}
	if r.overloaded(j.window) {
		r.tellLate(j, what)
		return
	}
	r.log.Warn(what+"; the window must not exceed the job's period less the fleet's spread",
		"job", j.key, "since_last_run", msDuration(d.sinceLast), "window", msDuration(d.rec.Window))
}

// checkWindow warns once if the run node's last writer had another window.
func (r *Runner) checkWindow(j *job, d decision) {
	c := &j.checks
	if w := d.prev.Window; w > 0 && w != d.rec.Window && !c.warned[0] {
		c.warned[0] = true
		what := "the fleet's windows differ for this job: ticks are lost or run twice; give every instance the same window (WithWindow, WithJobWindow)"
		if d.named {
			what = "the fleet's windows differ for this job: its ticks claimed by their names still run once, but a claim without a tick (RunNow, a scheduler not attached) can lose a tick or run one twice; give every instance the same window (WithWindow, WithJobWindow)"
		}
		r.log.Warn(what,
			"job", j.key, "window", msDuration(d.rec.Window), "other_window", msDuration(w), "other", d.prev.Writer)
	}
}

// checkWriter warns once if the run node's last writer is of an older
// version, which keeps no tick names: the runs it makes leave none, so
// that a named tick after one is decided by the server's clock too, and
// every tick before it is let go (runrec's Verdict): a tick of those that
// no instance ran is not run.
func (r *Runner) checkWriter(j *job, d decision) {
	c := &j.checks
	if d.prev.Old && !c.warned[4] {
		c.warned[4] = true
		r.log.Warn("an instance of an older version writes this job's run node: the runs it makes keep no tick name, so the ticks before each of them are let go (none runs twice; one no instance ran may be lost); upgrade it",
			"job", j.key, "other", d.prev.Writer)
	}
}

// msDuration is ms milliseconds.
func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// hint is WithBoundaryHint's text, in parentheses, or nothing.
func (r *Runner) hint() string {
	if r.cfg.boundary == "" {
		return ""
	}
	return " (" + r.cfg.boundary + ")"
}
