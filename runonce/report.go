package runonce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierlock/tierlock/zklock"
)

// reporter is what a Runner tells besides its decisions, each part told
// once per episode, not once per tick: a Claim's outcome to the observer,
// an outage of ZooKeeper, an overload and the lateness it is measured by,
// the envelope's checks (envelope.go), and the ticks stale or unknown.
// It decides nothing.
type reporter struct {
	log      *slog.Logger
	s        *zklock.Session
	timeout  time.Duration // the Runner's lock timeout
	boundary string        // WithBoundaryHint
	observe  func(Event)   // WithObserver, or nil

	heard       heard        // when ZooKeeper last answered
	late        lateness     // how late this instance is
	out         outage       // ZooKeeper's unavailability, logged in two lines
	over        overload     // an overload, told in two lines
	sessionGone sync.Once    // a Claim on a closed session, told
	stales      tally        // stale ticks skipped
	unknowns    tally        // named ticks the record cannot tell run
	toldClocks  atomic.Int32 // the hosts' clocks told to differ: 1, by more than the record keeps: 2 (envelope.go)
	toldAhead   atomic.Int32 // another host's clock told ahead of this one's: 1, by a window or more: 2 (clocks.go)
}

// newReporter returns the reporter of a Runner on s configured by cfg.
func newReporter(s *zklock.Session, cfg *config) *reporter {
	t := &reporter{log: cfg.log, s: s, timeout: cfg.timeout, boundary: cfg.boundary, observe: cfg.observe}
	t.heard.born = time.Now()
	t.out.log, t.out.s, t.out.timeout = cfg.log, s, cfg.timeout
	t.over.out, t.over.lateness, t.over.log = &t.out, &t.late, cfg.log
	return t
}

// report logs a Claim's outcome (a skip at Debug; a failure once per
// outage, or once a minute per job) and tells the observer, but of a run:
// its Claim tells it when it ends (run.go). It returns the Claim's
// latency.
func (t *reporter) report(ctx context.Context, j *job, p *probe, err error) time.Duration {
	latency := time.Since(p.entry)
	t.late.observe(latency)
	switch o := outcomeOf(err); {
	case o == Ran:
	case o != Failed:
		t.log.Debug("run skipped", "job", j.key, "reason", err)
	default:
		t.failed(ctx, j, p, err)
	}
	t.over.calm()
	if err != nil && t.observe != nil {
		t.observe(Event{Job: j.key, Outcome: outcomeOf(err), Latency: latency, Err: err, Tick: p.tick, Entry: p.entry})
	}
	return latency
}

// failed logs a failed Claim by what it met: ZooKeeper silent for long
// (the outage's lines) or not yet (Debug), lateness (overload's), the
// caller's context ended (the program stops the job: Debug), or anything
// else (once a minute per job).
func (t *reporter) failed(ctx context.Context, j *job, p *probe, err error) {
	switch t.kindOf(ctx, err, p) {
	case failedClosed:
		t.log.Debug("run skipped: the Runner is closed", "job", j.key, "err", err)
	case failedSessionClosed:
		// Not an outage: ZooKeeper will never answer this session again
		// (once, it was told "ZooKeeper unreachable: runs are
		// skipped until it answers").
		t.sessionGone.Do(func() {
			t.log.Error("the ZooKeeper session is closed: this Runner's runs are skipped for good; stop the scheduler and close the Runner before the session",
				"job", j.key, "err", err)
		})
	case failedCancelled:
		t.log.Debug("run skipped: the job's context ended", "job", j.key, "err", err)
	case failedSilent:
		t.out.silentSkip(j.key)
		t.log.Debug("run skipped: ZooKeeper silent", "job", j.key, "err", err)
	case failedUnreachable:
		t.out.unreachable(j.key, err)
	case failedLate:
		if !t.out.during(j.key) {
			t.over.tellLate(j, lateWhat(err))
		}
	default:
		now, last := time.Now().UnixNano(), j.warnedAt.Load()
		if now-last >= int64(time.Minute) && j.warnedAt.CompareAndSwap(last, now) {
			t.log.Warn("run skipped: lock failed (warned once a minute per job)", "job", j.key, "err", err)
		}
	}
}

// failureKind is what a failed Claim met.
type failureKind int

const (
	failedOther         failureKind = iota
	failedUnreachable               // ZooKeeper did not answer: the outage's lines
	failedLate                      // ZooKeeper answered, too late for the Claim: overload
	failedCancelled                 // the caller's context ended: the program stops the job
	failedSilent                    // ZooKeeper silent, not yet for long: nothing told
	failedClosed                    // the Runner was closed: the program's own doing
	failedSessionClosed             // the program closed the session: for good
)

// kindOf classifies err, a Claim's failure; ctx is the caller's (not Claim's
// own deadline).
func (t *reporter) kindOf(ctx context.Context, err error, p *probe) failureKind {
	switch {
	case errors.Is(err, ErrClosed):
		return failedClosed
	case errors.Is(err, zklock.ErrSessionClosed) || t.s.State() == zklock.StateClosed:
		return failedSessionClosed
	case ctx.Err() != nil:
		return failedCancelled
	case t.s.State() != zklock.StateConnected:
		return failedUnreachable
	case errors.Is(err, ErrSlowWrite):
		return failedLate
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, zklock.ErrLeaseExpired):
		// ZooKeeper may have answered, late: a lease lapses on round
		// trips longer than its bound too.
		return t.silence(p, err)
	case connectionError(err):
		return failedUnreachable
	}
	return failedOther
}

// silence says how silent ZooKeeper was to p's Claim, failed with err:
// failedUnreachable when it had answered none of the Runner's requests
// for the lock timeout, while the Claim waited for one for half of it or
// more (or the session's lease lapsed: its writes not confirmed in time,
// by a server silent or late); failedSilent when for half the timeout
// only (a busy server's pause, or an outage's first moments: nothing is
// told until it lasts); failedLate otherwise. Silence counts only while
// this process was not so slow (its scheduling latency under a quarter of
// the timeout) that its own lag could explain it. A Claim that failed
// between requests (this process was slow) or while the Runner's other
// requests were answered (ZooKeeper answered, late) did not meet an
// outage: those were counted as one, and ZooKeeper's returns logged, at
// each turn of a loaded fleet.
func (t *reporter) silence(p *probe, err error) failureKind {
	timeout := int64(t.timeout)
	now, out := t.heard.now(), p.pending
	switch {
	case errors.Is(err, zklock.ErrLeaseExpired):
		out = now - timeout/2
	case out == 0:
		return failedLate
	}
	if _, lag := t.late.figures(); lag >= t.timeout/4 || now-out < timeout/2 {
		return failedLate
	}
	if now-t.heard.at.Load() >= timeout {
		return failedUnreachable
	}
	return failedSilent
}

// sessionClosedErr makes err, a Claim's failure on a session the program
// closed, match zklock.ErrSessionClosed, as the log tells it (kindOf):
// go-zookeeper fails a closed connection's requests with its own
// zk.ErrConnectionClosed.
func (t *reporter) sessionClosedErr(err error) error {
	if errors.Is(err, zklock.ErrSessionClosed) || t.s.State() != zklock.StateClosed {
		return err
	}
	return fmt.Errorf("%w: %w", zklock.ErrSessionClosed, err)
}

// staleTick tells p's late tick of j, which the fleet ran: skipped.
func (t *reporter) staleTick(j *job, p *probe) error {
	late := p.lateBy.Round(time.Millisecond)
	if t.stales.add(j.key) {
		t.log.Warn("stale ticks skipped: the scheduler fired ticks more than their window late (this process was stopped or stalled, and replays the ticks it slept through, or its scheduler delayed them), and the fleet ran them: not run again (told once, and when ticks are on time again)",
			"job", j.key, "tick", tickString(p.name), "late", late)
	}
	return fmt.Errorf("%w: job %q: its tick of %s fired %v late, more than its window (%v), and the fleet ran it: not run again",
		ErrStale, j.key, tickString(p.name), late, p.window)
}

// unknown tells p's tick of j, which this instance cannot run, and whose
// run the record cannot show or rule out (why).
func (t *reporter) unknown(j *job, p *probe, why string) error {
	if t.unknowns.add(j.key) {
		t.log.Warn("ticks unknown: ticks this instance cannot run, whose runs the job's record can neither show nor rule out (the fleet may have run them; none runs twice) (told once, and when a tick is known again, with the ticks per job)",
			"job", j.key, "tick", tickString(p.name), "why", why)
	}
	return fmt.Errorf("%w: job %q: its tick of %s: the record cannot tell whether it ran: %s", ErrTickUnknown, j.key, tickString(p.name), why)
}

// ticksOnTime ends an episode of stale ticks: a named tick came on time.
func (t *reporter) ticksOnTime() {
	t.stales.end(t.log, "ticks on time again", "stale_ticks_skipped")
}

// ticksKnown ends an episode of ticks unknown: a named tick was decided.
func (t *reporter) ticksKnown() {
	t.unknowns.end(t.log, "ticks known again after ticks unknown", "ticks_unknown")
}
