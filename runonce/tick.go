package runonce

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/runrec"
	"github.com/tierlock/tierlock/zklock"
)

// The named ticks' side of the rule (stale.go says why). An attempt of a
// named tick whose record's last run had a name is decided by the names:
// a tick run (within a window of a run's) is skipped on the read alone
// (no write); one open takes the job's lock first, then writes the record
// conditional on the version read. The lock
// before the write: a claim cut between its write and its run (a kill, a
// stop) leaves its lock held, so that the others tell its tick lost
// (held), not run, until its session expires; the cut can then fall only
// between the write and the job's start. An attempt that finds the lock
// taken after the run node's last write meets another instance's claim
// between its take and its write, and decides on that write
// (awaitClaim).

// attemptNamed decides d, p's attempt of a named tick after a named run,
// on the record read (stat).
func (r *Runner) attemptNamed(ctx context.Context, conn *zk.Conn, j *job, p *probe, d decision, stat *zk.Stat) (decision, error) {
	w := ms(p.window(j))
	d.named, d.sinceLast = true, p.name-d.prev.Latest()
	r.checkNames(j, p, d, w)
	if !d.prev.Open(p.name, w) {
		// This tick ran, or is older than the runs the record keeps.
		d.verdict, d.local = runrec.Skip, true
		switch {
		case r.cfg.spread:
			return r.write(ctx, j, p, d, stat.Version) // spreading reads every attempt
		case r.mustWrite(j, d):
			return r.keepWrite(ctx, j, p, d, stat)
		}
		return d, nil
	}
	if d.rec.Yield {
		return r.write(ctx, j, p, d, stat.Version) // a step back (WithSpread): no lock
	}
	h, ok, err := r.takeBefore(ctx, j, p)
	switch {
	case err != nil:
		return d, err
	case !ok:
		d.looked, d.held, d.yielded, d.verdict = true, true, true, runrec.Skip
		if d.heldBy, err = r.holder(ctx, conn, j, p); err != nil {
			return d, fmt.Errorf("runonce: job %q: read its lock: %w", j.key, err)
		}
		if err := r.awaitClaim(ctx, j, p, d, stat); err != nil {
			return d, err
		}
		if r.mustWrite(j, d) {
			return r.keepWrite(ctx, j, p, d, stat)
		}
		return d, nil
	}
	d.looked = true
	d, err = r.write(ctx, j, p, d, stat.Version)
	if err != nil || d.verdict != runrec.Run || d.late > 0 {
		_ = h.Release() // a conflict (read again) or a failure: the lock goes
		return d, err
	}
	d.hold = h
	return d, nil
}

// takeBefore takes j's lock, without waiting, for p's claim before its
// write (a named tick's, a first run's): admitted to writing first (enter),
// an error that says the tick is lost when the take fails.
func (r *Runner) takeBefore(ctx context.Context, j *job, p *probe) (*zklock.Hold, bool, error) {
	if err := r.enter(p); err != nil {
		return nil, false, err
	}
	p.ask(r, ctx)
	h, ok, err := j.lock.TryAcquire(ctx)
	p.got(r, err)
	if err != nil {
		return nil, false, fmt.Errorf("runonce: job %q: %w (the tick is lost)", j.key, err)
	}
	return h, ok, nil
}

// mustWrite reports whether an attempt that would skip without a write
// writes all the same: a RemoveJob waits (it must see the job still
// scheduled), or this Runner has not written the job's record yet (its
// window and lock timeout, which RemoveJob and the other instances read).
func (r *Runner) mustWrite(j *job, d decision) bool {
	return d.prev.Removing != "" || !j.wrote.Load()
}

// keepWrite writes d's record read (stat) again as it is, but for this
// Runner's window and lock timeout (the largest written are kept),
// conditional on its version: never a run, no attempt's writer named.
func (r *Runner) keepWrite(ctx context.Context, j *job, p *probe, d decision, stat *zk.Stat) (decision, error) {
	if err := r.enter(p); err != nil {
		return d, err
	}
	keep := runrec.Keep(d.prev, d.rec.Window, stat.Mtime, stat.Mzxid)
	keep.Timeout, keep.MaxWindow = d.rec.Timeout, d.rec.MaxWindow
	p.ask(r, ctx)
	_, err := r.s.Txn(ctx, &zk.SetDataRequest{Path: j.runPath, Data: keep.Encode(), Version: stat.Version})
	p.got(r, err)
	if err != nil {
		return d, fmt.Errorf("runonce: job %q: write run node: %w", j.key, err)
	}
	j.wrote.Store(true)
	return d, nil
}

// lateUnnamed decides p's attempt of a late tick on a record whose last
// run had no name: not run (the server's clock dates the attempt by its
// claim, not by its tick), written when it must be.
func (r *Runner) lateUnnamed(ctx context.Context, j *job, p *probe, d decision, stat *zk.Stat) (decision, error) {
	d.verdict, d.local = runrec.Skip, true
	if r.mustWrite(j, d) {
		return r.keepWrite(ctx, j, p, d, stat)
	}
	return d, nil
}

// skipped returns the error of p's attempt, decided d, that does not run:
// for a named tick, whether the fleet ran it (already ran; stale when
// late) or not (lost), told.
func (r *Runner) skipped(j *job, p *probe, d decision) error {
	switch {
	case p.name == 0 || (p.lateBy == 0 && d.prev.Tick == 0):
		return fmt.Errorf("%w: job %q", ErrAlreadyRan, j.key) // the server's clock's verdict
	case d.noNode:
		return r.unknown(j, p, fmt.Sprintf("it fired %v late, and the job has no run node (it may be a tick of a job removed since)", p.lateBy.Round(time.Millisecond)))
	}
	ran := d.prev.RanTick(p.name, ms(p.window(j)))
	if !d.named {
		ran = r.ranSince(d, p)
	}
	switch {
	case ran && p.lateBy > 0:
		return r.staleTick(j, p)
	case ran:
		r.unknowns.end(r, ticksKnown, "ticks_unknown")
		return fmt.Errorf("%w: job %q", ErrAlreadyRan, j.key)
	case d.named:
		return r.unknown(j, p, fmt.Sprintf("it is not a window above the ticks the job's record has let go (up to %s: runs older than the last %d it keeps, the latest %s, or a run without a tick, which may have been this one's)", tickString(d.prev.Floor), runrec.MaxRecent, tickString(d.prev.Latest())))
	}
	return r.unknown(j, p, fmt.Sprintf("it fired %v late (this process stopped or stalled, or its scheduler delayed it), and the job's last run has no tick", p.lateBy.Round(time.Millisecond)))
}

// ranSince reports whether d's record, whose last run has no name, shows
// a run at or after p's tick: the last run's age by the server's clock
// (its bound from this instance's last write) no more than the tick's by
// this host's clock, each of one clock. False when it cannot tell.
func (r *Runner) ranSince(d decision, p *probe) bool {
	bound, ok := r.clock.bound(d.readAt)
	return ok && bound-d.prev.At <= d.readAt.Round(0).Sub(p.tick).Milliseconds()
}

// staleTick tells p's late tick, which the fleet ran: skipped.
func (r *Runner) staleTick(j *job, p *probe) error {
	late := p.lateBy.Round(time.Millisecond)
	if r.stales.add(j.key) {
		r.log.Warn("stale ticks skipped: the scheduler fired ticks more than their window late (this process was stopped or stalled, and replays the ticks it slept through, or its scheduler delayed them), and the fleet ran them: not run again (told once, and when ticks are on time again)",
			"job", j.key, "tick", tickString(p.name), "late", late)
	}
	return fmt.Errorf("%w: job %q: its tick of %s fired %v late, more than its window (%v), and the fleet ran it: not run again",
		ErrStale, j.key, tickString(p.name), late, p.window(j))
}

// unknown tells p's tick, which this instance cannot run, and whose run
// the record cannot show or rule out (why).
func (r *Runner) unknown(j *job, p *probe, why string) error {
	if r.unknowns.add(j.key) {
		r.log.Warn("ticks unknown: ticks this instance cannot run, whose runs the job's record can neither show nor rule out (the fleet may have run them; none runs twice) (told once, and when a tick is known again, with the ticks per job)",
			"job", j.key, "tick", tickString(p.name), "why", why)
	}
	return fmt.Errorf("%w: job %q: its tick of %s: the record cannot tell whether it ran: %s", ErrTickUnknown, j.key, tickString(p.name), why)
}

// ticksKnown ends an episode of ticks unknown.
const ticksKnown = "ticks known again after ticks unknown"

// checkNames tells what p's named tick shows of the fleet's setting, once
// each: the hosts' clocks differ (an instance ran a later tick before this
// one fired, on time by this host's clock), or the job's ticks are closer
// than its window (its last tick here less than a window before this one).
func (r *Runner) checkNames(j *job, p *probe, d decision, w int64) {
	ahead := d.prev.Latest() - p.name
	level := int32(1)
	what := "the hosts' clocks differ: another instance ran a later tick of this job before this instance's tick fired, on time by this host's clock; each tick still runs once (by its name), but keep the hosts' clocks in step (NTP): RemoveJob and the claims without a tick count on it"
	if !d.prev.Open(p.name, w) && !d.prev.RanTick(p.name, w) {
		level = 2
		what = "the hosts' clocks differ by more than the job's record keeps: another instance ran later ticks of this job before this instance's tick fired, on time by this host's clock, and the record no longer names the runs of ticks this old, so this instance cannot tell whether they ran and runs none (ticks unknown); keep the hosts' clocks in step (NTP)"
	}
	if told := r.toldClocks.Load(); p.lateBy == 0 && ahead >= w && told < level && r.toldClocks.CompareAndSwap(told, level) {
		r.log.Warn(what, "job", j.key, "tick", tickString(p.name), "latest_tick_run", tickString(d.prev.Latest()), "by", d.prev.By, "ahead_by_at_least", msDuration(ahead))
	}
	if gap := p.name - j.lastName; j.lastName != 0 && gap > 0 && gap < w && !j.checks.warned[3] {
		j.checks.warned[3] = true
		r.log.Warn("the job's ticks are closer than its window: a tick within a window of a run is taken for it, and does not run; the window must be below the job's period (WithWindow, WithJobWindow)",
			"job", j.key, "ticks_apart", msDuration(gap), "window", msDuration(w))
	}
	j.lastName = p.name
}

// tickString formats a tick's name (ms).
func tickString(name int64) string { return time.UnixMilli(name).UTC().Format(time.RFC3339Nano) }

// tally is an episode of ticks of one kind on this instance (stale,
// lost, an outage's): told in a line when it begins and one when it ends,
// naming every job with the ticks it cost.
type tally struct {
	mu    sync.Mutex
	since time.Time
	jobs  map[string]int64 // nil: no episode
}

// add counts a tick of job; it reports whether the episode begins.
func (t *tally) add(job string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	begins := t.jobs == nil
	if begins {
		t.jobs, t.since = map[string]int64{}, time.Now()
	}
	t.jobs[job]++
	return begins
}

// take ends the episode, if one is on: how many ticks, and of which jobs.
func (t *tally) take() (n int64, jobs string, since time.Time, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.jobs == nil {
		return 0, "", time.Time{}, false
	}
	for _, c := range t.jobs {
		n += c
	}
	jobs, since, t.jobs = jobsLine(t.jobs), t.since, nil
	return n, jobs, since, true
}

// end tells the episode's end, if one is on, in a line what, with count
// the name of its ticks' count.
func (t *tally) end(r *Runner, what, count string) {
	if n, jobs, since, ok := t.take(); ok {
		r.log.Warn(what, count, n, "jobs", jobs, "for", time.Since(since).Round(time.Millisecond))
	}
}

// errDecideAgain ends an attempt that found the job's lock held by a
// claim under way, which wrote since, or by a holder gone since
// (awaitClaim): decide reads the run node again.
var errDecideAgain = errors.New("runonce: the job's lock's holder wrote the run node or let the lock go: decide again")

// awaitClaim decides what a lock found held means for d's attempt (of a
// tick open, by the record read, stat). A holder whose lock node was
// made after the record's last write (its Czxid above the record's Mzxid:
// ZooKeeper's order, no clock) is not a run of an earlier tick, whose
// take precedes its write, but another instance's claim between its take
// and its write: it may run the tick, step back or fail. The attempt
// waits for that claim's write by the holder's bounds, not its own: the
// holder's claim began before its node, so before it was seen, and writes
// within its lock timeout (the largest the record shows, or this
// instance's), unless this claim's own ends first (an eighth of its lock
// timeout left to decide again). A holder this instance has told already
// (j.held) is not looked at again. It returns errDecideAgain when the run
// node was written since or the holder has let the lock go, ctx's cause
// when ctx ended, ErrTickUnknown when this claim's time ran out while the
// holder could still write (it may run the tick), and nil when the wait
// does not apply or the holder's bound passed: the tick is lost to the
// lock.
func (r *Runner) awaitClaim(ctx context.Context, j *job, p *probe, d decision, stat *zk.Stat) error {
	seen := time.Now()
	if d.heldBy == "" || d.heldBy == j.held.node || d.prev.Removing != "" {
		return nil
	}
	_, hold, err := getNode(ctx, r.s, path.Join(j.lock.Path(), d.heldBy))
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return errDecideAgain // let go since the take
	case err != nil || hold.Czxid <= stat.Mzxid:
		return nil // taken before the record's last write: an earlier run's
	}
	until := seen.Add(max(msDuration(d.prev.Timeout), r.cfg.timeout))
	own := p.entry.Add(r.cfg.timeout - r.cfg.timeout/8)
	cut := own.Before(until)
	if cut {
		until = own
	}
	if left := time.Until(until); left > 0 {
		end, err := r.awaitWrite(ctx, j, stat.Version, left, nil)
		switch {
		case ctx.Err() != nil:
			return err
		case end == waitWritten || errors.Is(err, zk.ErrNoNode):
			return errDecideAgain
		}
	}
	if cut {
		return r.unknown(j, p, fmt.Sprintf("another instance's claim of it (%s) had taken the job's lock and not yet written its record when this claim's lock timeout (%v) ran out: it may run it", d.heldBy, r.cfg.timeout))
	}
	return nil
}
