package runonce

import (
	"sync/atomic"
	"time"

	"github.com/tierlock/tierlock/internal/runrec"
)

// The checks that tell a fleet it is outside the rule's envelope, once per
// job (issue 39, items 1 and 2): what the rule's own state shows, where
// today a misconfigured fleet only loses ticks or runs them twice,
// silently.

// checks is a job's state for them: the run count and this instance's
// Claim calls at its first decision (base) and at its last one, and the
// strikes, under the job's busy flag.
type checks struct {
	known               bool
	baseRuns, baseCalls int64
	lastRuns, lastCalls int64
	lost                int
	warned              [3]bool // window, over, lost

	toldLate atomic.Bool // overload.go
}

// checkEnvelope looks at a decided attempt (d) of this instance, made at
// its calls-th Claim of the job, and says once per kind when the fleet is
// outside the envelope S < W <= P - S. Inside it, each of this instance's
// attempts reads the record after its tick's run, or makes the run, so:
//
//   - from its first attempt on, the runs the record counts grow by at
//     most one per Claim call of its own (a tick), give or take one at
//     the ends: more means ticks run more than once;
//   - its first attempt of a tick (no run by another since its last one,
//     a tick ago) runs: a skip there, twice, means ticks are late or lost.
func (r *Runner) checkEnvelope(j *job, d decision, calls int64) {
	c := &j.checks
	r.checkWindow(j, d)
	if !c.known || d.first || d.prev.Runs < c.lastRuns { // a new node: count afresh
		c.known, c.baseRuns, c.baseCalls = true, d.prev.Runs, calls
	} else {
		runs, ticks := d.prev.Runs-c.baseRuns, calls-c.baseCalls
		if runs > ticks+1 && !c.warned[1] {
			c.warned[1] = true
			if what := "the job runs more than once per tick"; r.overloaded(j.window) {
				r.tellLate(j, what)
			} else {
				r.log.Warn(what+": the fleet's timers for it are further apart than its window; start the job on a common boundary"+r.hint()+" or widen the window",
					"job", j.key, "runs", runs, "ticks", ticks, "window", msDuration(d.rec.Window))
			}
		}
		if d.prev.Runs == c.lastRuns && calls-c.lastCalls == 1 && d.verdict == runrec.Skip && !d.yielded {
			if c.lost++; c.lost == 2 && !c.warned[2] {
				c.warned[2] = true
				r.firstSkipped(j, d)
			}
		}
	}
	c.lastRuns, c.lastCalls = d.prev.Runs, calls
	if d.verdict == runrec.Run {
		c.lastRuns++
	}
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
		r.log.Warn("the fleet's windows differ for this job: ticks are lost or run twice; give every instance the same window (WithWindow, WithJobWindow)",
			"job", j.key, "window", msDuration(d.rec.Window), "other_window", msDuration(w), "other", d.prev.Writer)
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
