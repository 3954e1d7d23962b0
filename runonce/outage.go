package runonce

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

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
	mu      sync.Mutex
	down    bool
	since   time.Time // the first failure
	upSince time.Time // answered since, without a failure (zero: not yet)
	skipped int64
	relapse int        // returns that did not last
	stalled bool       // it began as this process's stall (stall.go)
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

// heard keeps when ZooKeeper last answered one of the Runner's requests:
// nanoseconds since the Runner was made, on the monotonic clock.
type heard struct {
	born time.Time
	at   atomic.Int64
}

func (h *heard) now() int64 { return int64(time.Since(h.born)) }

// note records an answer, whatever it said, when err is one: nil or the
// server's refusal, not a deadline, a lapsed lease nor a lost connection.
// It reports whether it was.
func (h *heard) note(err error) bool {
	if err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, zklock.ErrSessionClosed) || errors.Is(err, zklock.ErrLeaseExpired) || connectionError(err)) {
		return false
	}
	h.at.Store(h.now())
	return true
}

// probe follows one Claim's requests, to tell, when the Claim fails on its
// deadline, whether ZooKeeper was silent (an outage) or answered too late
// (overload: this process, or the server, slow).
type probe struct {
	entry   time.Time // Claim's entry: the timer's firing, as near as the Runner knows it
	pending int64     // the send of the request being waited for (heard's clock); 0: none
	entered bool      // admitted to writing (close.go)
	tick    time.Time // the tick's scheduled time (ClaimTick); zero: not known
	// name is the tick's name (ms, stale.go), 0 without one; lateBy its
	// lateness, 0 when on time; every the period of ClaimEvery's job, its
	// window.
	name   int64
	lateBy time.Duration
	every  time.Duration
}

// window returns the window of p's claim of j.
func (p *probe) window(j *job) time.Duration {
	if p.every > 0 {
		return p.every
	}
	return j.window
}

// ask notes a request about to be sent; got, its return (err): an answer,
// or the end of the wait for one, which leaves the request pending.
func (p *probe) ask(r *Runner, ctx context.Context) {
	p.pending = 0
	if ctx.Err() == nil {
		p.pending = r.heard.now()
	}
}

func (p *probe) got(r *Runner, err error) {
	if r.heard.note(err) {
		p.pending = 0
	}
}

// silence says how silent ZooKeeper was to the Claim, failed with err:
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
func (p *probe) silence(r *Runner, err error) failureKind {
	t := int64(r.cfg.timeout)
	now, out := r.heard.now(), p.pending
	switch {
	case errors.Is(err, zklock.ErrLeaseExpired):
		out = now - t/2
	case out == 0:
		return failedLate
	}
	if _, lag := r.late.figures(); lag >= r.cfg.timeout/4 || now-out < t/2 {
		return failedLate
	}
	if now-r.heard.at.Load() >= t {
		return failedUnreachable
	}
	return failedSilent
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

// sessionClosedErr makes err, a Claim's failure on a session the program
// closed, match zklock.ErrSessionClosed, as the log tells it (kindOf):
// go-zookeeper fails a closed connection's requests with its own
// zk.ErrConnectionClosed.
func (r *Runner) sessionClosedErr(err error) error {
	if errors.Is(err, zklock.ErrSessionClosed) || r.s.State() != zklock.StateClosed {
		return err
	}
	return fmt.Errorf("%w: %w", zklock.ErrSessionClosed, err)
}

// kindOf classifies err, a Claim's failure; ctx is the caller's (not Claim's
// own deadline).
func (r *Runner) kindOf(ctx context.Context, err error, p *probe) failureKind {
	switch {
	case errors.Is(err, ErrClosed):
		return failedClosed
	case errors.Is(err, zklock.ErrSessionClosed) || r.s.State() == zklock.StateClosed:
		return failedSessionClosed
	case ctx.Err() != nil:
		return failedCancelled
	case r.s.State() != zklock.StateConnected:
		return failedUnreachable
	case errors.Is(err, ErrSlowWrite):
		return failedLate
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, zklock.ErrLeaseExpired):
		// ZooKeeper may have answered, late: a lease lapses on round
		// trips longer than its bound too.
		return p.silence(r, err)
	case connectionError(err):
		return failedUnreachable
	}
	return failedOther
}

// unreachable notes a Claim of job that failed to reach ZooKeeper (err).
func (r *Runner) unreachable(job string, err error) {
	o := &r.out
	o.mu.Lock()
	first := !o.down
	switch {
	case first:
		o.down, o.since, o.upSince, o.skipped, o.relapse = true, time.Now(), time.Time{}, 0, 0
		o.session, o.jobs = r.s.SessionID(), map[string]int64{}
		o.stall, o.stalled = stallNear(o.since)
		if time.Since(o.silentAt) < 2*r.cfg.timeout {
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
		r.log.Warn("this process stalled (stopped, suspended or paused: its monotonic clock jumped), and its ZooKeeper session's connection with it: runs are skipped until the session answers again",
			"stalled_for", stall.Len().Round(time.Millisecond), "state", r.s.State(), "err", err)
	case first:
		r.log.Warn("ZooKeeper unreachable: runs are skipped until it answers", "state", r.s.State(), "err", err)
	}
}

// duringOutage reports whether an outage is on (its end not yet
// settled); with job, a run of it skipped then counts as one of its
// skipped runs.
func (r *Runner) duringOutage(job string) bool {
	o := &r.out
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
func (r *Runner) silentSkip(job string) {
	if r.duringOutage(job) {
		return
	}
	o := &r.out
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.silent == nil || time.Since(o.silentAt) >= 2*r.cfg.timeout {
		o.silent = map[string]int64{}
	}
	o.silent[job]++
	o.silentAt = time.Now()
}

// jobsLine names the jobs of counts, each with its count, sorted.
func jobsLine(counts map[string]int64) string {
	var b strings.Builder
	for _, job := range slices.Sorted(maps.Keys(counts)) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", job, counts[job])
	}
	return b.String()
}

// reached notes a Claim that ZooKeeper answered.
func (r *Runner) reached() {
	o := &r.out
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
		r.log.Warn("the ZooKeeper session answers again after this process's stall", "down_for", upSince.Sub(since).Round(time.Millisecond),
			"stalled_for", stall.Len().Round(time.Millisecond), "runs_skipped", skipped, "jobs", jobs, "session_expired", session != r.s.SessionID())
	case over:
		r.log.Warn("ZooKeeper reachable again", "down_for", upSince.Sub(since).Round(time.Millisecond),
			"runs_skipped", skipped, "jobs", jobs, "returns_that_did_not_last", relapse)
	}
}

// connectionError reports whether err is a connection's or a session's:
// ZooKeeper did not answer.
func connectionError(err error) bool {
	for _, e := range []error{zk.ErrConnectionClosed, zk.ErrNoServer, zk.ErrSessionExpired, zk.ErrClosing,
		zklock.ErrDisconnected, zklock.ErrSessionExpired, zklock.ErrOutcomeUnknown} {
		if errors.Is(err, e) {
			return true
		}
	}
	var op *net.OpError
	return errors.As(err, &op)
}
