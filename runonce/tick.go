package runonce

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tierlock/tierlock/internal/runrec"
	"github.com/tierlock/tierlock/zklock"
)

// Ticks a scheduler names. A scheduler that tells each fire's scheduled
// time (cronlock and gocronlock, with the scheduler attached) claims it
// with ClaimTick: the tick is its name, the same on every instance
// whatever its clock reads (a spec's boundary), and the run node keeps
// the names of the last runs. Two comparisons, each of one clock:
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
// fires a tick when the run before it ends. A late tick the fleet ran (a
// run of it recorded) is skipped as stale, said once when this instance's
// stale ticks begin and once when its ticks are on time again; one no
// instance ran runs, late; one whose run the record cannot show (older
// than the runs it keeps, more than a window before the last run's fire
// when that run had no tick, or the job's last run had no tick) is
// unknown, and told so; one within a window of that fire ran (its run).
// That fire by a host's clock a window or more ahead of this one's is not
// a floor: the run is one near its fire and near when it ran by this
// host's clock, and the ticks after it run by their names (runrec's
// readNames). The server's clock dates a tick only for a claim without
// one (Claim) and for RemoveJob.
//
// An attempt of a named tick whose record's last run had a name is
// decided by the names, a second decision over the same read (claim.go
// reads, and hands it here): a tick run (within a window of a run's) is
// skipped on the read alone (no write); one open takes the job's lock
// first, then writes the record conditional on the version read. The lock
// before the write: a claim cut between its write and its run (a kill, a
// stop) leaves its lock held, so that the others tell its tick lost
// (held), not run, until its session expires; the cut can then fall only
// between the write and the job's start. An attempt that finds the lock
// taken after the last run's write (the record carries its zxid) meets
// another instance's claim between its take and its write, and decides on
// that write, unless the lock is the last run's own, a run without a tick,
// which takes it after its write (await.go).

// byNames decides d, p's attempt of a named tick after a named run, on
// the record read, rec the record it writes; it returns the run's hold
// when p's claim runs the tick.
func (c *claimer) byNames(ctx context.Context, j *job, p *probe, d decision, rec runrec.Record) (decision, *zklock.Hold, error) {
	w, last := ms(p.window), d.read.last
	d.sinceLast = p.name - last.Latest()
	c.tell.checkNames(j, p, last, w)
	if !last.MayOpen(p.name, w, p.fire()) {
		// This tick ran, or is older than the runs the record keeps.
		d.verdict, d.basis = runrec.Skip, byNames
		d, err := c.skipNamed(ctx, j, p, d, rec)
		return d, nil, err
	}
	if rec.Yield {
		d, err := c.write(ctx, j, p, d, rec, byNames) // a step back (WithSpread): no lock
		return d, nil, err
	}
	h, ok, err := c.takeBefore(ctx, j, p)
	switch {
	case err != nil:
		return d, nil, err
	case !ok:
		d, err := c.heldNamed(ctx, j, p, d, rec)
		return d, nil, err
	}
	d.lock.looked = true
	if testHookTaken != nil {
		testHookTaken()
	}
	d, err = c.write(ctx, j, p, d, rec, byNames)
	if err != nil || d.verdict != runrec.Run || d.wrote.late > 0 {
		_ = h.Release() // a conflict (read again) or a failure: the lock goes
		return d, nil, err
	}
	return d, h, nil
}

// skipNamed ends d, p's attempt of a named tick the record shows run (or
// too old to tell), skipped: written when spreading, which reads every
// attempt, or when it must be (mustWrite).
func (c *claimer) skipNamed(ctx context.Context, j *job, p *probe, d decision, rec runrec.Record) (decision, error) {
	switch {
	case c.spread:
		return c.write(ctx, j, p, d, rec, byNames)
	case mustWrite(j, d):
		return c.keepWrite(ctx, j, p, d, rec)
	}
	return d, nil
}

// heldNamed ends d, p's attempt of an open named tick whose take of the
// job's lock found it held: by another instance's claim under way, whose
// write it waits for (awaitClaim), or by a run of an earlier tick, a
// RemoveJob or a claim cut, and the tick is lost to the lock.
func (c *claimer) heldNamed(ctx context.Context, j *job, p *probe, d decision, rec runrec.Record) (decision, error) {
	d.verdict = runrec.Skip
	if c.heldByRunNear(d.read, p) {
		// That run's lock, and the tick its run: already ran.
		d.basis, d.near = byNames, true
		if mustWrite(j, d) {
			return c.keepWrite(ctx, j, p, d, rec)
		}
		return d, nil
	}
	d.lock.looked, d.lock.refused = true, true
	var err error
	if d.lock.holder, err = c.holder(ctx, j, p); err != nil {
		return d, fmt.Errorf("runonce: job %q: read its lock: %w", j.key, err)
	}
	if err := c.awaitClaim(ctx, j, p, d); err != nil {
		return d, err
	}
	if mustWrite(j, d) {
		return c.keepWrite(ctx, j, p, d, rec)
	}
	return d, nil
}

// lateUnnamed decides d, p's attempt of a late tick on a record whose last
// run had no name: not run (the server's clock dates the attempt by its
// claim, not by its tick), written when it must be.
func (c *claimer) lateUnnamed(ctx context.Context, j *job, p *probe, d decision, rec runrec.Record) (decision, error) {
	d.verdict, d.basis = runrec.Skip, byClock
	if mustWrite(j, d) {
		return c.keepWrite(ctx, j, p, d, rec)
	}
	return d, nil
}

// skipped returns the error of p's attempt, decided d, that does not run:
// for a named tick, whether the fleet ran it (already ran; stale when
// late) or not (lost), told.
func (c *claimer) skipped(j *job, p *probe, d decision) error {
	last := d.read.last
	switch {
	case p.name == 0 || (p.lateBy == 0 && last.Tick == 0):
		return fmt.Errorf("%w: job %q", ErrAlreadyRan, j.key) // the server's clock's verdict
	case d.basis == noRecord:
		return c.tell.unknown(j, p, fmt.Sprintf("it fired %v late, and the job has no run node (it may be a tick of a job removed since)", p.lateBy.Round(time.Millisecond)))
	}
	named := d.basis == byNames
	ran := last.RanTick(p.name, ms(p.window)) || nearNameless(last, p.name, ms(p.window)) || ranNear(d)
	if !named {
		ran = c.ranSince(d, p)
	}
	switch {
	case ran && p.lateBy > 0:
		return c.tell.staleTick(j, p)
	case ran:
		c.tell.ticksKnown()
		return fmt.Errorf("%w: job %q", ErrAlreadyRan, j.key)
	case named:
		return c.tell.unknown(j, p, fmt.Sprintf("it is not a window above the ticks the job's record has let go (up to %s: runs older than the last %d it keeps, the latest %s, or a run without a tick, which may have been this one's)", tickString(last.Floor), runrec.MaxRecent, tickString(last.Latest())))
	}
	return c.tell.unknown(j, p, fmt.Sprintf("it fired %v late (this process stopped or stalled, or its scheduler delayed it), and the job's last run has no tick", p.lateBy.Round(time.Millisecond)))
}

// nearNameless reports whether last's run, a run without a tick (its tick
// is its fire, which is also the floor), fired within w of name: the
// record holds that run's time, and a run so near the tick is its run.
func nearNameless(last runrec.Last, name, w int64) bool {
	return last.Unnamed() && name > last.Tick-w && name < last.Tick+w
}

// ranNear reports whether d's write, a named tick's after a run without a
// tick whose host's clock is ahead of this one's, found its tick run by
// that run: near it by this host's clock, as the write's Stat dates it
// (runrec's RanNear).
func ranNear(d decision) bool {
	st := d.wrote.stat
	return d.near || (st != nil && d.wrote.rec.RanNear(st.Mtime, runrec.EpochOf(st.Mzxid)))
}

// heldByRunNear reports whether p's tick, whose take found the job's lock
// held, is closed (not Open) by the last run, one without a tick from a
// host whose clock is ahead (its fire a window or more after p's), that
// ran within a window of it by this host's clock: that run's start by the
// server's clock plus the most this clock read ahead of the server's at
// its last write. Its write cannot decide it (the lock is held): the
// tick's run is that run, still going.
func (c *claimer) heldByRunNear(rd reading, p *probe) bool {
	last, w := rd.last, ms(p.window)
	over, ok := c.clock.overAtMost(runrec.EpochOf(rd.stat.Mzxid))
	at := last.At + over
	return ok && last.Unnamed() && last.Tick-p.fire() >= w && !last.Open(p.name, w) && p.name-at < w && at-p.name < w
}

// ranSince reports whether d's record, whose last run has no name, shows
// a run at or after p's tick: the last run's age by the server's clock
// (its bound from this instance's last write) no more than the tick's by
// this host's clock, each of one clock. False when it cannot tell.
func (c *claimer) ranSince(d decision, p *probe) bool {
	bound, ok := c.clock.bound(d.read.at)
	return ok && bound-d.read.last.At <= d.read.at.Round(0).Sub(p.tick).Milliseconds()
}

// lastRunZxid is the zxid of the write of the last run rd shows: carried
// on by the writes since (runrec.Last.RunZxid), or, from a writer of a
// version before it, the record's last write.
func lastRunZxid(rd reading) int64 {
	if z := rd.last.RunZxid; z != 0 {
		return z
	}
	return rd.stat.Mzxid
}

// testHookHolderRead, set by tests only, may fail awaitClaim's read of
// the lock's holder, as a dropped connection would.
var testHookHolderRead func() error

// errDecideAgain ends an attempt that found the job's lock held by a
// claim under way, which wrote since, or by a holder gone since
// (awaitClaim): decide reads the run node again.
var errDecideAgain = errors.New("runonce: the job's lock's holder wrote the run node or let the lock go: decide again")
