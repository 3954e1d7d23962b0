package runonce

import (
	"context"
	"fmt"
	"time"

	"github.com/tierlock/tierlock/internal/hostclock"
)

// Ticks a scheduler names. A scheduler that tells each
// fire's scheduled time (cronlock and gocronlock, with the scheduler
// attached) claims it with ClaimTick: the tick is its name, the same on
// every instance whatever its clock reads (a spec's boundary), and the
// run node keeps the names of the last runs (tick.go). Two comparisons,
// each of one clock:
//
//   - a fire's lateness is the host's clock at the claim less the tick,
//     both read on the host (a stopped process's wall clock runs on, so it
//     sees its replay late; a host whose clock is off the others' fires
//     on time by its own);
//   - the tick is compared with the names of the runs, never with the
//     server's clock: it runs when no run's tick is within a window of it
//     (runrec's Open).
//
// robfig/cron v3 on Go 1.23 and later fires, when a stopped process
// resumes (SIGSTOP, a suspend, a long GC), the ticks it slept through,
// late; gocron fires each job's missed tick once; cron.DelayIfStillRunning
// fires a tick when the run before it ends. A late tick the fleet ran
// (a run of it recorded) is skipped as stale, said once when this
// instance's stale ticks begin and once when its ticks are on time again;
// one no instance ran runs, late; one whose run the record cannot show
// (older than the runs it keeps, at or before a run without a tick, or
// the job's last run had no tick) is unknown, and told so. The server's clock dates a tick only for a claim
// without one (Claim) and for RemoveJob.

// ClaimTick is Claim for a tick whose scheduled time the scheduler tells
// (tick, the spec's boundary as this host's clock reads it, not the
// fire's time). The rule compares the tick with the ticks of the job's
// runs, which its run node keeps (the largest eight): it runs when no
// run's tick is within the job's window of it, once per tick whatever the
// hosts' and the server's clocks and the latencies. A tick fired more than
// its window late (or 100 ms, for a shorter window) by this host's clock
// is a replay, or a tick delayed by the scheduler: skipped as stale
// (ErrStale) when the fleet ran it, run when no instance ran it, and unknown
// (ErrTickUnknown) when the record cannot show whether one did. A late tick
// of a job that has no run node is not run: it may be one of a job
// removed since.
func (r *Runner) ClaimTick(ctx context.Context, key string, tick time.Time) (*Claim, error) {
	if tick.IsZero() {
		return nil, fmt.Errorf("%w: ClaimTick with the zero time", ErrInvalidOption)
	}
	return r.claim(ctx, key, tick, 0)
}

// ClaimEvery is ClaimTick for a job that ticks every period from a phase
// of each instance's own (robfig/cron's "@every 10s", counted from when
// the job was added, moved by a stop): its ticks are not named alike
// across the fleet, so its window is its period, and it runs once per
// period across the fleet whatever the phases.
func (r *Runner) ClaimEvery(ctx context.Context, key string, tick time.Time, period time.Duration) (*Claim, error) {
	switch {
	case tick.IsZero():
		return nil, fmt.Errorf("%w: ClaimEvery with the zero time", ErrInvalidOption)
	case period <= 0:
		return nil, fmt.Errorf("%w: ClaimEvery with a period of %v", ErrInvalidOption, period)
	}
	return r.claim(ctx, key, tick, period)
}

// staleFloor is the least lateness that makes a tick late, for a job
// whose window is shorter (a fleet outside the envelope already): a
// timer's ordinary lag is not a replay.
const staleFloor = 100 * time.Millisecond

// fire returns the name of p's fire: this host's clock at the claim's
// entry, on the clock that names the ticks (ms). A run without a tick
// keeps it as its name (runrec's Fire).
func (p *probe) fire() int64 { return p.entry.Add(hostclock.Offset()).UnixMilli() }

// named notes p's tick: its name, and its lateness on this host's clock
// (the claim's entry less the tick, both wall-clock readings of this
// host). One on time ends an episode of stale ticks.
func (r *Runner) named(j *job, p *probe) {
	if p.tick.IsZero() {
		return
	}
	p.name = p.tick.Add(hostclock.Offset()).UnixMilli()
	p.lateBy = p.entry.Round(0).Sub(p.tick)
	if p.lateBy <= max(p.window(j), staleFloor) {
		p.lateBy = 0
		r.stales.end(r, "ticks on time again", "stale_ticks_skipped")
	}
}
