package runonce

import (
	"log/slog"
	"sync"
	"time"

	"github.com/tierlock/tierlock/internal/mono"
	"github.com/tierlock/tierlock/zklock"
)

// outage keeps ZooKeeper's unavailability, as Claim sees it, to two log
// lines per Runner: one when a Claim first fails to reach ZooKeeper, one
// when ZooKeeper has answered again for outageSettle, with how long and
// how many runs were skipped meanwhile (once, one warning per
// job and tick was 15 lines a second for a fleet of 3 × 10 jobs). The
// settling is the hysteresis: a connection that comes and goes is one
// outage, not two lines per return.
type outage struct {
	log     *slog.Logger
	s       *zklock.Session
	timeout time.Duration // the Runner's lock timeout

	mu      sync.Mutex
	down    bool
	since   time.Time // the first failure
	upSince time.Time // answered since, without a failure (zero: not yet)
	skipped int64
	relapse int        // returns that did not last
	stalled bool       // it began as this process's stall (stallNear)
	stall   mono.Stall // that stall
	session int64      // the session's id when it began
	// jobs counts the runs skipped per job, for the line at its end (once,
	// it named none); silent counts those of the Claims that
	// met ZooKeeper silent before it began (its first moments), when.
	jobs     map[string]int64
	silent   map[string]int64
	silentAt time.Time
}

// outageSettle is how long ZooKeeper must answer, without a Claim failing
// to reach it, for an outage to be over.
const outageSettle = 5 * time.Second

// stallMemory is how long after a stall of this process (stall.go) an
// outage, or a claim's failure, is the stall's.
const stallMemory = 10 * time.Second

// stallNear returns the stall of this process within stallMemory before
// at, or over it, if any.
func stallNear(at time.Time) (mono.Stall, bool) {
	return mono.StallIn(at.Add(-stallMemory), at)
}

// unreachable notes a Claim of job that failed to reach ZooKeeper (err).
func (o *outage) unreachable(job string, err error) {
	o.mu.Lock()
	first := !o.down
	switch {
	case first:
		o.down, o.since, o.upSince, o.skipped, o.relapse = true, time.Now(), time.Time{}, 0, 0
		o.session, o.jobs = o.s.SessionID(), map[string]int64{}
		o.stall, o.stalled = stallNear(o.since)
		if time.Since(o.silentAt) < 2*o.timeout {
			for k, n := range o.silent {
				o.jobs[k] += n
				o.skipped += n
			}
		}
		o.silent = nil
	case !o.upSince.IsZero():
		o.upSince = time.Time{}
		o.relapse++
	}
	o.skipped++
	o.jobs[job]++
	stalled, stall := o.stalled, o.stall
	o.mu.Unlock()
	switch {
	case first && stalled:
		o.log.Warn("this process stalled (stopped, suspended or paused: its monotonic clock jumped), and its ZooKeeper session's connection with it: runs are skipped until the session answers again",
			"stalled_for", stall.Len().Round(time.Millisecond), "state", o.s.State(), "err", err)
	case first:
		o.log.Warn("ZooKeeper unreachable: runs are skipped until it answers", "state", o.s.State(), "err", err)
	}
}

// during reports whether an outage is on (its end not yet settled); with
// job, a run of it skipped then counts as one of its skipped runs.
func (o *outage) during(job string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.down && job != "" {
		o.skipped++
		o.jobs[job]++
	}
	return o.down
}

// silentSkip counts a run of job skipped on a Claim that met ZooKeeper
// silent: the outage's, if one is on or begins soon.
func (o *outage) silentSkip(job string) {
	if o.during(job) {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.silent == nil || time.Since(o.silentAt) >= 2*o.timeout {
		o.silent = map[string]int64{}
	}
	o.silent[job]++
	o.silentAt = time.Now()
}

// reached notes a Claim that ZooKeeper answered.
func (o *outage) reached() {
	now := time.Now()
	o.mu.Lock()
	if !o.down {
		o.mu.Unlock()
		return
	}
	if o.upSince.IsZero() {
		o.upSince = now
	}
	over := now.Sub(o.upSince) >= outageSettle
	since, upSince, skipped, relapse, stalled, session := o.since, o.upSince, o.skipped, o.relapse, o.stalled, o.session
	if stalled {
		since = o.stall.From // the outage went with the stall: from its start
	}
	stall := o.stall
	var jobs string
	if over {
		o.down, jobs = false, jobsLine(o.jobs)
	}
	o.mu.Unlock()
	switch {
	case over && stalled:
		o.log.Warn("the ZooKeeper session answers again after this process's stall", "down_for", upSince.Sub(since).Round(time.Millisecond),
			"stalled_for", stall.Len().Round(time.Millisecond), "runs_skipped", skipped, "jobs", jobs, "session_expired", session != o.s.SessionID())
	case over:
		o.log.Warn("ZooKeeper reachable again", "down_for", upSince.Sub(since).Round(time.Millisecond),
			"runs_skipped", skipped, "jobs", jobs, "returns_that_did_not_last", relapse)
	}
}
