package runonce

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/runrec"
	"github.com/tierlock/tierlock/zklock"
)

// A claim, in one function (try) over the Runner's session: read the run
// node, let the record's rule decide (by the server's clock here, by the
// ticks' names in tick.go), write, take the job's lock. It returns the
// run's hold, or why not; what it decided goes to the reporter.

// try claims p's tick of j, at its calls-th Claim of the job, and, when
// this instance runs it, takes the job's lock for the run; it returns the
// hold. lockCtx, within ctx, bounds the claim by its lock timeout; ctx is
// the caller's, which a claim cut by a stall reads the record again
// within (afterStall).
func (c *claimer) try(ctx, lockCtx context.Context, j *job, p *probe, calls int64) (*zklock.Hold, error) {
	if p.named() {
		c.tell.ticksOnTime()
	}
	h, d, err := c.take(lockCtx, j, p)
	if d.decided() || errors.Is(err, ErrLockHeld) {
		c.tell.out.reached() // ZooKeeper answered
	}
	if d.decided() {
		c.tell.checkEnvelope(j, d, calls, p)
	}
	if err != nil {
		return nil, c.afterStall(ctx, j, p, c.tell.sessionClosedErr(err))
	}
	if p.name != 0 {
		c.tell.ticksKnown()
	}
	return h, nil
}

// take claims the tick and, when this instance runs it, takes the job's
// lock without waiting for the run; it returns the hold. The decision
// does not need the lock: the run node's version serializes the decisions
// (attempt). The lock keeps runs from overlapping: a run of an earlier
// tick still going elsewhere, or a dead instance's hold until its session
// expires, makes this tick lost (ErrLockHeld), told as such (lost.go) and
// not counted as run.
func (c *claimer) take(ctx context.Context, j *job, p *probe) (*zklock.Hold, decision, error) {
	d, h, err := c.decide(ctx, j, p)
	c.heldEnds(j, d)
	c.missedDecided(j, d)
	switch {
	case err != nil:
		return nil, d, err
	case d.wrote.late > 0:
		c.unCount(ctx, j, d)
		return nil, d, fmt.Errorf("runonce: job %q: %w: answered %v after Claim's entry, too late to rule out that the tick ran: the tick is lost",
			j.key, ErrSlowWrite, d.wrote.late.Round(time.Millisecond))
	case d.lock.refused || (d.lock.holder != "" && d.wrote.steppedBack):
		return nil, d, c.lostToHeld(ctx, j, p, d.lock.holder, d.read.last.Removing)
	case d.wrote.steppedBack:
		return nil, d, fmt.Errorf("%w: job %q", ErrYielded, j.key)
	case d.verdict != runrec.Run:
		return nil, d, c.skipped(j, p, d)
	case h != nil: // taken before the write (a named tick, a first run)
		j.ownNode = path.Base(h.Node())
		return h, d, nil
	}
	p.ask(&c.tell.heard, ctx)
	h, ok, err := j.lock.TryAcquire(ctx)
	p.got(&c.tell.heard, err)
	switch {
	case err != nil:
		c.unCount(ctx, j, d)
		return nil, d, fmt.Errorf("runonce: job %q: %w (the tick is lost)", j.key, err)
	case !ok:
		// Taken since the attempt looked (a rare race): the write is made
		// not to count.
		c.unCount(ctx, j, d)
		return nil, d, c.lostToHeld(ctx, j, p, "", d.read.last.Removing)
	}
	j.ownNode = path.Base(h.Node())
	return h, d, nil
}

// decide applies the rule. A version conflict (a write this instance did
// not see), a write that found the node deleted (a RemoveJob's, which
// would otherwise fail the tick), and an attempt that waited for another
// instance's claim under way (errDecideAgain), is read again and decided
// afresh, until an attempt decides or the Claim's deadline: each conflict
// is another instance's write that went through, so simultaneous timers
// settle within as many rounds as instances race (once, three rounds at
// most made a lost race a failure, "version conflict", for 27-34 of 72
// attempts of eight instances under WithSpread). maxConflicts bounds a
// pathological server. It returns the run's hold when the lock was taken
// before the write.
func (c *claimer) decide(ctx context.Context, j *job, p *probe) (decision, *zklock.Hold, error) {
	var d decision
	var h *zklock.Hold
	var err error
	for range maxConflicts {
		d, h, err = c.attempt(ctx, j, p)
		if !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNodeExists) && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, errDecideAgain) {
			return d, h, err
		}
	}
	return d, h, err
}

// maxConflicts bounds the attempts of one Claim.
const maxConflicts = 64

// attempt is one read and one write of the run node, the write
// conditional on the version read: refused if anyone wrote the node since
// (a decision this instance did not see), so that the decisions form one
// chain in which each stands on the previous one. Its reply's Stat (mtime,
// Mzxid) decides, with what it read (runrec.Record.Verdict, Confirms). A
// named tick after a named run is decided by the names instead (tick.go).
func (c *claimer) attempt(ctx context.Context, j *job, p *probe) (decision, *zklock.Hold, error) {
	var d decision
	conn := c.s.Conn()
	if conn == nil {
		return d, nil, zklock.ErrSessionClosed
	}
	rec := runrec.Record{Window: ms(p.window), Timeout: ms(c.timeout), By: c.by, Tick: p.name, Fire: p.fire()}
	asked := time.Now()
	p.ask(&c.tell.heard, ctx)
	data, stat, err := getNode(ctx, c.s, j.runPath)
	read := time.Now()
	if err == nil || errors.Is(err, zk.ErrNoNode) {
		err = c.fresh(ctx, p, asked, err)
	}
	p.got(&c.tell.heard, err)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return c.first(ctx, conn, j, p, rec)
	case err != nil:
		return d, nil, fmt.Errorf("runonce: job %q: read run node: %w", j.key, err)
	}
	if testHookAfterRead != nil {
		testHookAfterRead(j.runPath)
	}
	d.read = reading{last: runrec.Derive(data, stat.Mtime, stat.Mzxid), stat: stat, at: read}
	rec = c.carry(rec, d.read)
	c.checkClocks(j, p, d.read)
	switch {
	case p.name != 0 && d.read.last.Tick != 0:
		return c.byNames(ctx, j, p, d, rec)
	case p.lateBy > 0:
		d, err = c.lateUnnamed(ctx, j, p, d, rec)
		return d, nil, err
	case c.skipsLocally(j, p, &d):
		return d, nil, nil
	}
	if c.looksAtLock(j, d.read.last) {
		// Before the write: a tick whose lock is held is lost, and its
		// write must not count as a run (lost.go).
		d.lock.looked = true
		if d.lock.holder, err = c.holder(ctx, j, p); err != nil {
			return d, nil, fmt.Errorf("runonce: job %q: read its lock: %w", j.key, err)
		}
	}
	rec.Yield = rec.Yield || d.lock.holder != "" // never a run: SteppedBack tells whether it would have been
	d, err = c.write(ctx, j, p, d, rec, byClock)
	return d, nil, err
}

// carry completes rec, an attempt's record, with what it carries on of
// the record read (rd): the last run, the names kept, the largest window
// and lock timeout written, and, spreading, the instances seen alive.
func (c *claimer) carry(rec runrec.Record, rd reading) runrec.Record {
	prev, stat := rd.last, rd.stat
	rec.Last, rec.LastBy, rec.Runs = prev.At, prev.By, prev.Runs
	rec.Prev, rec.Epoch = stat.Mtime, runrec.EpochOf(stat.Mzxid)
	rec.Timeout, rec.MaxWindow = max(rec.Timeout, prev.Timeout), max(rec.Window, prev.MaxWindow)
	rec.LastTick, rec.Ticks, rec.Floor = prev.Tick, prev.Ticks, prev.Floor
	rec.RunZxid = prev.RunZxid
	if c.spread {
		rec.Recent, rec.Since, rec.Yield = prev.Recent, prev.Since, prev.Yields(c.by)
	}
	return rec
}

// first makes the job's run node, its first run: nothing before it, so
// the write runs (createRun makes its parents, persistent). It takes the
// job's lock first, as a named tick's claim does (tick.go), so that a
// lock taken after the last run's write is always a claim under way
// (awaitClaim), never this run's.
func (c *claimer) first(ctx context.Context, conn *zk.Conn, j *job, p *probe, rec runrec.Record) (decision, *zklock.Hold, error) {
	var d decision
	if p.lateBy > 0 {
		// A late tick, and no record to tell whether the fleet ran it: not
		// run (RemoveJob deletes a job's node once no attempt on time can
		// be of a tick it ran).
		d.verdict, d.basis = runrec.Skip, noRecord
		return d, nil, nil
	}
	h, ok, err := c.takeBefore(ctx, j, p)
	switch {
	case err != nil:
		return d, nil, err
	case !ok:
		if err := c.awaitFirst(ctx, j, p); err != nil {
			return d, nil, err // errDecideAgain: another first claim made the node
		}
		d.verdict = runrec.Skip // a RemoveJob, or a first claim cut
		d.lock.looked, d.lock.refused = true, true
		return d, nil, nil
	}
	if testHookTaken != nil {
		testHookTaken()
	}
	rec.Delay = time.Since(p.entry).Milliseconds()
	p.ask(&c.tell.heard, ctx)
	err = c.nodes.createRun(ctx, conn, j, rec.Encode())
	p.got(&c.tell.heard, err)
	if err != nil {
		_ = h.Release() // decided again (another's first run), or failed: the lock goes
		return d, nil, fmt.Errorf("runonce: job %q: create run node: %w", j.key, err)
	}
	d.verdict, d.basis = runrec.Run, firstRun
	j.wrote.Store(true)
	return d, h, nil
}

// awaitFirst waits, for a first claim that found the job's lock held and
// no run node, for that node: another instance's first claim takes the
// lock before it makes the node (first), so the holder is most often one
// under way. It waits within this claim's lock timeout, less an eighth to
// decide again, and returns errDecideAgain when the node appears, ctx's
// cause when ctx ends, nil when the wait passed: the holder is a
// RemoveJob's, or a first claim cut between its take and its create, and
// the tick is lost to the lock.
func (c *claimer) awaitFirst(ctx context.Context, j *job, p *probe) error {
	conn := c.s.Conn()
	if conn == nil {
		return zklock.ErrSessionClosed
	}
	ok, _, ch, err := conn.ExistsW(j.runPath)
	switch {
	case err != nil:
		return fmt.Errorf("runonce: job %q: watch run node: %w", j.key, err)
	case ok:
		return errDecideAgain
	}
	timer := time.NewTimer(time.Until(p.entry.Add(c.timeout - c.timeout/8)))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-ch:
		return errDecideAgain
	case <-timer.C:
		return nil
	}
}

// skipsLocally decides d without a write when the server-clock note says
// the last run is certainly recent (serverClock), and tells a clock jump.
func (c *claimer) skipsLocally(j *job, p *probe, d *decision) bool {
	if c.spread || d.read.last.Removing != "" {
		// A RemoveJob waits: it must see this attempt (remove.go).
		return false
	}
	stat := d.read.stat
	rd := clockRead{epoch: runrec.EpochOf(stat.Mzxid), mtime: stat.Mtime, last: d.read.last.At, answered: d.read.at}
	recent, since, jump := c.clock.recent(rd, p.entry, ms(p.window))
	if recent {
		d.verdict, d.basis, d.sinceLast = runrec.Skip, byClock, since
		return true
	}
	if jump > 0 {
		c.tell.log.Warn("clock jump: this process's clock fell behind the ZooKeeper server's (a host suspend, a stalled clock, or the ensemble leader's clock stepped forward); the Runner reads the server's clock again from its writes",
			"job", j.key, "behind_at_least", msDuration(jump))
	}
	return false
}

// testHookAfterRead, set by tests only, runs between the read and the
// write of a run node.
var testHookAfterRead func(runPath string)

// testHookEntered, set by tests only, runs in a claim of r's, of key,
// once its entry is read: a test that stalls the claim makes the other
// instance's run after it, not 50 ms after it began (stalledclaim_test.go).
var testHookEntered func(r *Runner, key string)

// testHookTaken, set by tests only, runs in a claim between its take of
// the job's lock and its write of the run node (a first claim's create, a
// named tick's write).
var testHookTaken func()
