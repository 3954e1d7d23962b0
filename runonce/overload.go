package runonce

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Overload, told as overload: a fleet of 3 processes
// at 1,000 jobs a second each, on a machine too slow for it, heard "the
// fleet's timers for it are further apart than its window; start the job
// on a common boundary" 1,468 times (the timers were on one: the scheduler
// fired late) and an outage at each turn while ZooKeeper answered. Now a
// symptom of lateness is told as overload, with the measure (lateness.go)
// and what to change: once per job, and in a summary when an overload
// begins and when it ends, like an outage.
//
// The symptoms: a Claim that could not confirm its run (ErrSlowWrite) or
// passed its timeout while ZooKeeper answered (late by definition), and,
// while this instance is late, the envelope's (envelope.go: a tick run
// twice, first attempts of a tick that skip). Late means an overload under
// way, or the Claim's latency and the scheduling latency (99th percentiles)
// together half the window or more: then the fleet's spread and the
// write's round trip, which the window must leave room for, are this
// instance's lateness rather than its timers. An instance can measure only
// itself: one whose peers are late, not itself, is told of their
// symptoms as before.

// overloadSettle is how long an overload must go without a late Claim, and
// with the lateness under a quarter of the window, to be over (a variable
// for the tests).
var overloadSettle = 30 * time.Second

// overload is an episode of it, told to log; out is the Runner's outage,
// lateness its measure.
type overload struct {
	out      *outage
	lateness *lateness
	log      *slog.Logger

	on       atomic.Bool // read by every Claim (calm)
	mu       sync.Mutex
	since    time.Time
	lastLate time.Time
	window   time.Duration // of the job whose symptom began it
	jobs     int           // jobs told
	late     int64         // symptoms
}

// overloaded reports whether this instance is late for a job of window w.
func (o *overload) overloaded(w time.Duration) bool {
	if testHookNeverLate {
		return false
	}
	if o.on.Load() {
		return true
	}
	lock, lag := o.lateness.figures()
	return lock+lag >= w/2
}

// tellLate notes a symptom of lateness (what) of j: the summary when an
// overload begins, the job's line once; nothing during an outage.
func (o *overload) tellLate(j *job, what string) {
	if o.out.during("") {
		// The outage's doing: requests held through it come back late.
		return
	}
	o.mu.Lock()
	begins := !o.on.Load()
	if begins {
		o.on.Store(true)
		o.since, o.window, o.jobs, o.late = time.Now(), j.window, 0, 0
	}
	o.lastLate = time.Now()
	o.late++
	tell := j.checks.toldLate.CompareAndSwap(false, true)
	if tell {
		o.jobs++
	}
	o.mu.Unlock()
	if !begins && !tell {
		return
	}
	lock, lag := o.lateness.figures()
	if begins {
		o.log.Warn("overloaded: runs start late, so ticks are lost or run twice; give each process fewer jobs, widen the window (WithWindow: it must stay below the jobs' period less the fleet's spread), or add instances; if ZooKeeper's answers are what is slow (lock_p99 high, scheduling_latency_p99 low), a faster ensemble",
			"lock_p99", lock.Round(time.Millisecond), "scheduling_latency_p99", lag.Round(time.Millisecond), "window", j.window)
	}
	if tell {
		o.log.Warn("job's tick late: overload (see \"overloaded\", once per job)", "job", j.key, "symptom", what,
			"lock_p99", lock.Round(time.Millisecond), "scheduling_latency_p99", lag.Round(time.Millisecond))
	}
}

// calm ends an overload that has settled; every Claim calls it.
func (o *overload) calm() {
	if !o.on.Load() {
		return
	}
	lock, lag := o.lateness.figures()
	o.mu.Lock()
	over := time.Since(o.lastLate) >= overloadSettle && lock+lag < o.window/4
	since, jobs, late := o.since, o.jobs, o.late
	if over {
		o.on.Store(false)
	}
	o.mu.Unlock()
	if over {
		o.log.Warn("no longer overloaded", "for", time.Since(since).Round(time.Second), "jobs_told", jobs, "late_locks", late,
			"lock_p99", lock.Round(time.Millisecond), "scheduling_latency_p99", lag.Round(time.Millisecond))
	}
}

// lateWhat names the symptom of a late Claim's failure.
func lateWhat(err error) string {
	if errors.Is(err, ErrSlowWrite) {
		return "the run node's write was answered too late to confirm the run (ErrSlowWrite): the tick is lost"
	}
	return "the claim passed its lock timeout while ZooKeeper answered: the run is skipped"
}

// testHookNeverLate, set by tests only, has overloaded say no: the tests
// of the envelope's lines, whose small windows a loaded machine's
// latencies would make overload.
var testHookNeverLate bool
