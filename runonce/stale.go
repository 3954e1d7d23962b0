package runonce

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Stale ticks (issue 50, item 7). robfig/cron v3 on Go 1.23 and later
// fires, when a stopped process resumes (SIGSTOP, a suspend, a long GC),
// the ticks it slept through: 4.1 s late after a 5-s stop, then once more
// a period later, each dated by its own scheduled time; gocron fires each
// job's missed tick once. The rule dates an attempt by the server's clock
// at the Claim, finds no run within the window of it, and runs it: a job
// that processes "the data of tick T" processes T twice (1 to 22 (job,
// tick)s of 840 twice in five runs of a 5-s pause). A scheduler adapter
// that knows each fire's scheduled tick claims with ClaimTick: a tick more
// than the job's window behind the server's clock (or this process's own:
// whichever is further ahead) is stale, skipped (ErrStale) and said so,
// once when this instance's stale ticks begin and once when its ticks are
// on time again.

// ClaimTick is Claim for a tick whose scheduled time the scheduler tells
// (tick, on the fleet's clock: the spec's boundary, not the fire's time):
// a tick that fires more than the job's window after it (or 100 ms, for
// a shorter window), by the ZooKeeper server's clock as this instance's
// last write bounds it or by this process's own, whichever says later, is
// stale: a replay of a tick
// the process slept through, which the fleet ran on time. It is skipped,
// with an error matching ErrStale (and ErrSkipped), without a request.
// The tick also lets the Runner count the ticks this instance saw, for its
// checks of the fleet's envelope.
func (r *Runner) ClaimTick(ctx context.Context, key string, tick time.Time) (*Claim, error) {
	if tick.IsZero() {
		return nil, fmt.Errorf("%w: ClaimTick with the zero time", ErrInvalidOption)
	}
	return r.claim(ctx, key, tick)
}

// stale returns ErrStale for p's tick, if it is one, and tells it.
func (r *Runner) stale(j *job, p *probe) error {
	if p.tick.IsZero() {
		return nil
	}
	late := p.entry.Round(0).Sub(p.tick) // by this process's wall clock
	if bound, ok := r.clock.bound(p.entry); ok {
		late = max(late, time.UnixMilli(bound).Sub(p.tick))
	}
	if late <= max(j.window, staleFloor) {
		r.stales.onTime(r)
		return nil
	}
	r.stall.note()
	r.stales.skip(r, j, p.tick, late)
	return fmt.Errorf("%w: job %q: its tick of %s fired %v late, more than its window (%v) and %v: the fleet ran it; not run again",
		ErrStale, j.key, p.tick.UTC().Format(time.RFC3339Nano), late.Round(time.Millisecond), j.window, staleFloor)
}

// staleFloor is the least lateness that makes a tick stale, for a job
// whose window is shorter (a fleet outside the envelope already): a
// timer's ordinary lag is not a replay.
const staleFloor = 100 * time.Millisecond

// stales is an episode of stale ticks on this instance: one line when it
// begins, one when a tick is on time again.
type stales struct {
	mu    sync.Mutex
	on    bool
	since time.Time
	count int
}

func (s *stales) skip(r *Runner, j *job, tick time.Time, late time.Duration) {
	s.mu.Lock()
	begins := !s.on
	if begins {
		s.on, s.since, s.count = true, time.Now(), 0
	}
	s.count++
	s.mu.Unlock()
	if begins {
		r.log.Warn("stale ticks skipped: the scheduler fired ticks more than their window late (this process was stopped or stalled, and replays the ticks it slept through); the fleet ran them, so they are not run again (told once, and when ticks are on time again)",
			"job", j.key, "tick", tick.UTC().Format(time.RFC3339Nano), "late", late.Round(time.Millisecond))
	}
	r.log.Debug("stale tick skipped", "job", j.key, "tick", tick, "late", late)
}

func (s *stales) onTime(r *Runner) {
	s.mu.Lock()
	ended := s.on
	n, since := s.count, s.since
	s.on = false
	s.mu.Unlock()
	if ended {
		r.log.Warn("ticks on time again", "stale_ticks_skipped", n, "for", time.Since(since).Round(time.Millisecond))
	}
}
