package runonce

import (
	"context"
	"time"
)

// report logs a Claim's outcome (a skip at Debug; a failure once per
// outage, or once a minute per job) and tells the observer, but of a run:
// its Claim tells it when it ends (run.go). It returns the Claim's
// latency.
func (r *Runner) report(ctx context.Context, j *job, p *probe, err error) time.Duration {
	latency := time.Since(p.entry)
	r.late.observe(latency)
	switch o := outcomeOf(err); {
	case o == Ran:
	case o != Failed:
		r.log.Debug("run skipped", "job", j.key, "reason", err)
	default:
		r.failed(ctx, j, p, err)
	}
	r.calm()
	if err != nil {
		r.Observe(Event{Job: j.key, Outcome: outcomeOf(err), Latency: latency, Err: err, Tick: p.tick, Entry: p.entry})
	}
	return latency
}

// failed logs a failed Claim by what it met: ZooKeeper silent for long
// (the outage's lines) or not yet (Debug), lateness (overload's), the
// caller's context ended (the program stops the job: Debug), or anything
// else (once a minute per job).
func (r *Runner) failed(ctx context.Context, j *job, p *probe, err error) {
	switch r.kindOf(ctx, err, p) {
	case failedClosed:
		r.log.Debug("run skipped: the Runner is closed", "job", j.key, "err", err)
	case failedSessionClosed:
		// Not an outage: ZooKeeper will never answer this session again
		// (once, it was told "ZooKeeper unreachable: runs are
		// skipped until it answers").
		r.sessionGone.Do(func() {
			r.log.Error("the ZooKeeper session is closed: this Runner's runs are skipped for good; stop the scheduler and close the Runner before the session",
				"job", j.key, "err", err)
		})
	case failedCancelled:
		r.log.Debug("run skipped: the job's context ended", "job", j.key, "err", err)
	case failedSilent:
		r.silentSkip(j.key)
		r.log.Debug("run skipped: ZooKeeper silent", "job", j.key, "err", err)
	case failedUnreachable:
		r.unreachable(j.key, err)
	case failedLate:
		if !r.duringOutage(j.key) {
			r.tellLate(j, lateWhat(err))
		}
	default:
		now, last := time.Now().UnixNano(), j.warnedAt.Load()
		if now-last >= int64(time.Minute) && j.warnedAt.CompareAndSwap(last, now) {
			r.log.Warn("run skipped: lock failed (warned once a minute per job)", "job", j.key, "err", err)
		}
	}
}
