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

// The rule's application (the package doc states it, internal/runrec
// decides): under the job's lock, one read and one guarded write of the
// run node.

// decision is what one attempt read and decided.
type decision struct {
	verdict runrec.Verdict
	prev    runrec.Last   // the job's state the attempt read
	first   bool          // the attempt created the run node
	rec     runrec.Record // what it wrote
	wrote   *zk.Stat      // its write's Stat
	decided bool          // the write was applied: verdict holds
	local   bool          // a skip known without a write (serverClock.recent): verdict Skip
	yielded bool          // it would have run, but stepped back (WithSpread, or the lock held)
	looked  bool          // it looked at the job's lock before its write (lost.go)
	heldBy  string        // the lock's holder node then: "" free
	late    time.Duration // a run not confirmed: its write's answer came this long after Claim's entry
	readAt  time.Time     // when the read it decided on was answered
	held    bool          // the job's lock found held by the attempt's take (tick.go)
	noNode  bool          // a late tick that found no run node: not run
	named   bool          // decided by the ticks' names (tick.go)
	hold    *zklock.Hold  // the run's hold, taken before its write (tick.go)
	// sinceLast is the time from the last run to this attempt's timer, by
	// the server's clock (ms); for a named tick, from the last run's tick.
	sinceLast int64
}

// take claims the tick and, when this instance runs it, takes the job's
// lock without waiting for the run; it returns the hold. entry is Claim's
// entry. The decision does not need the lock: the run node's version
// serializes the decisions (attempt). The lock keeps runs from
// overlapping: a run of an earlier tick still going elsewhere, or a dead
// instance's hold until its session expires, makes this tick lost
// (ErrLockHeld), told as such (lost.go) and not counted as run.
func (r *Runner) take(ctx context.Context, j *job, p *probe) (*zklock.Hold, decision, error) {
	d, err := r.decide(ctx, j, p)
	r.heldEnds(j, d)
	switch {
	case err != nil:
		return nil, d, err
	case d.late > 0:
		r.unCount(ctx, j, d)
		return nil, d, fmt.Errorf("runonce: job %q: %w: answered %v after Claim's entry, too late to rule out that the tick ran: the tick is lost",
			j.key, ErrSlowWrite, d.late.Round(time.Millisecond))
	case d.held || (d.heldBy != "" && d.yielded):
		return nil, d, r.lostToHeld(ctx, j, p, d.heldBy, d.prev.Removing)
	case d.yielded:
		return nil, d, fmt.Errorf("%w: job %q", ErrYielded, j.key)
	case d.verdict != runrec.Run:
		return nil, d, r.skipped(j, p, d)
	case d.hold != nil:
		j.ownNode = path.Base(d.hold.Node())
		return d.hold, d, nil
	}
	p.ask(r, ctx)
	h, ok, err := j.lock.TryAcquire(ctx)
	p.got(r, err)
	switch {
	case err != nil:
		r.unCount(ctx, j, d)
		return nil, d, fmt.Errorf("runonce: job %q: %w (the tick is lost)", j.key, err)
	case !ok:
		// Taken since the attempt looked (a rare race): the write is made
		// not to count.
		r.unCount(ctx, j, d)
		return nil, d, r.lostToHeld(ctx, j, p, "", d.prev.Removing)
	}
	j.ownNode = path.Base(h.Node())
	return h, d, nil
}

// decide applies the rule. A version conflict (a write this instance did
// not see), a write that found the node deleted (a RemoveJob's: issue
// 56, item 2, it failed the tick), and an attempt that waited for another
// instance's claim under way (errDecideAgain), is read again and decided
// afresh, until an attempt decides or
// the Claim's deadline: each conflict is another instance's write that
// went through, so simultaneous timers settle within as many rounds as
// instances race (once, three rounds at most made a lost race
// a failure, "version conflict", for 27-34 of 72 attempts of eight
// instances under WithSpread). maxConflicts bounds a pathological server.
func (r *Runner) decide(ctx context.Context, j *job, p *probe) (decision, error) {
	var d decision
	var err error
	for range maxConflicts {
		d, err = r.attempt(ctx, j, p)
		if !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNodeExists) && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, errDecideAgain) {
			return d, err
		}
	}
	return d, err
}

// maxConflicts bounds the attempts of one Claim.
const maxConflicts = 64

// attempt is one read and one write of the run node, the write
// conditional on the version read: refused if anyone wrote the node since
// (a decision this instance did not see), so that the decisions form one
// chain in which each stands on the previous one. Its reply's Stat (mtime,
// Mzxid) decides, with what it read (runrec.Record.Verdict, Confirms).
func (r *Runner) attempt(ctx context.Context, j *job, p *probe) (decision, error) {
	conn := r.s.Conn()
	if conn == nil {
		return decision{}, zklock.ErrSessionClosed
	}
	d := decision{rec: runrec.Record{Window: ms(p.window(j)), Timeout: ms(r.cfg.timeout), By: r.by, Tick: p.name, Fire: p.fire()}}
	asked := time.Now()
	p.ask(r, ctx)
	data, stat, err := getNode(ctx, r.s, j.runPath)
	read := time.Now()
	if err == nil || errors.Is(err, zk.ErrNoNode) {
		err = r.fresh(ctx, p, asked, err)
	}
	p.got(r, err)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return r.first(ctx, conn, j, p, d)
	case err != nil:
		return d, fmt.Errorf("runonce: job %q: read run node: %w", j.key, err)
	}
	if testHookAfterRead != nil {
		testHookAfterRead(j.runPath)
	}
	d.prev, d.readAt = runrec.Derive(data, stat.Mtime, stat.Mzxid), read
	d.rec.Last, d.rec.LastBy, d.rec.Runs = d.prev.At, d.prev.By, d.prev.Runs
	d.rec.Prev, d.rec.Epoch = stat.Mtime, runrec.EpochOf(stat.Mzxid)
	d.rec.Timeout, d.rec.MaxWindow = max(d.rec.Timeout, d.prev.Timeout), max(d.rec.Window, d.prev.MaxWindow)
	d.rec.LastTick, d.rec.Ticks, d.rec.Floor = d.prev.Tick, d.prev.Ticks, d.prev.Floor
	if r.cfg.spread {
		d.rec.Recent, d.rec.Since, d.rec.Yield = d.prev.Recent, d.prev.Since, d.prev.Yields(r.by)
	}
	switch {
	case p.name != 0 && d.prev.Tick != 0:
		return r.attemptNamed(ctx, conn, j, p, d, stat)
	case p.lateBy > 0:
		return r.lateUnnamed(ctx, j, p, d, stat)
	case r.skipsLocally(j, p, &d, stat, read):
		return d, nil
	}
	if r.looksAtLock(j, d.prev) {
		// Before the write: a tick whose lock is held is lost, and its
		// write must not count as a run (lost.go).
		d.looked = true
		if d.heldBy, err = r.holder(ctx, conn, j, p); err != nil {
			return d, fmt.Errorf("runonce: job %q: read its lock: %w", j.key, err)
		}
	}
	d.rec.Yield = d.rec.Yield || d.heldBy != "" // never a run: SteppedBack tells whether it would have been
	return r.write(ctx, j, p, d, stat.Version)
}

// first makes the job's run node, its first run: nothing before it, so
// the write runs (createRun makes its parents, persistent). It takes the
// job's lock first, as a named tick's claim does (tick.go), so that a
// lock taken after the record's last write is always a claim under way
// (awaitClaim), never this run's.
func (r *Runner) first(ctx context.Context, conn *zk.Conn, j *job, p *probe, d decision) (decision, error) {
	if p.lateBy > 0 {
		// A late tick, and no record to tell whether the fleet ran it: not
		// run (RemoveJob deletes a job's node once no attempt on time can
		// be of a tick it ran).
		d.verdict, d.local, d.noNode = runrec.Skip, true, true
		return d, nil
	}
	h, ok, err := r.takeBefore(ctx, j, p)
	switch {
	case err != nil:
		return d, err
	case !ok:
		if err := r.awaitFirst(ctx, j, p); err != nil {
			return d, err // errDecideAgain: another first claim made the node
		}
		d.looked, d.held, d.verdict = true, true, runrec.Skip // a RemoveJob, or a first claim cut
		return d, nil
	}
	if testHookBeforeCreate != nil {
		testHookBeforeCreate()
	}
	d.rec.Delay = time.Since(p.entry).Milliseconds()
	p.ask(r, ctx)
	err = r.createRun(ctx, conn, j, d.rec.Encode())
	p.got(r, err)
	if err != nil {
		_ = h.Release() // decided again (another's first run), or failed: the lock goes
		return d, fmt.Errorf("runonce: job %q: create run node: %w", j.key, err)
	}
	d.verdict, d.first, d.decided, d.hold = runrec.Run, true, true, h
	j.wrote.Store(true)
	return d, nil
}

// awaitFirst waits, for a first claim that found the job's lock held and
// no run node, for that node: another instance's first claim takes the
// lock before it makes the node (first), so the holder is most often one
// under way. It waits within this claim's lock timeout, less an eighth to
// decide again, and returns errDecideAgain when the node appears, ctx's
// cause when ctx ends, nil when the wait passed: the holder is a
// RemoveJob's, or a first claim cut between its take and its create, and
// the tick is lost to the lock.
func (r *Runner) awaitFirst(ctx context.Context, j *job, p *probe) error {
	conn := r.s.Conn()
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
	timer := time.NewTimer(time.Until(p.entry.Add(r.cfg.timeout - r.cfg.timeout/8)))
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

// fresh returns read's result (nil or zk.ErrNoNode), the read asked at
// asked for p's claim, or a deadline's error: for a
// read asked more than the lock timeout after the claim's entry (this
// process stalled between the two: a stopped process may read after a
// RemoveJob deleted the job's node, and take the tick it ran for a first
// run), and for one answered past the claim's deadline, which is not an
// answer, as if its wait had ended first. So a claim decides on a read
// answered at most twice its lock timeout after its entry (RemoveJob
// waits for that). The first is marked errStalled: the claim, cut by a
// stall, is told as the record read after it shows its tick (stall.go).
func (r *Runner) fresh(ctx context.Context, p *probe, asked time.Time, read error) error {
	switch {
	case asked.Sub(p.entry) > r.cfg.timeout:
		return fmt.Errorf("the claim's read asked %v after its entry, past its lock timeout (%v): %w: %w",
			asked.Sub(p.entry).Round(time.Millisecond), r.cfg.timeout, errStalled, context.DeadlineExceeded)
	case ctx.Err() != nil:
		return context.Cause(ctx)
	}
	return read
}

// skipsLocally decides d without a write when the server-clock note says
// the last run is certainly recent (serverClock), and tells a clock jump.
func (r *Runner) skipsLocally(j *job, p *probe, d *decision, stat *zk.Stat, read time.Time) bool {
	if r.cfg.spread || d.prev.Removing != "" {
		// A RemoveJob waits: it must see this attempt (remove.go).
		return false
	}
	rd := clockRead{epoch: runrec.EpochOf(stat.Mzxid), mtime: stat.Mtime, last: d.prev.At, answered: read}
	recent, since, jump := r.clock.recent(rd, p.entry, d.rec.Window)
	if recent {
		d.local, d.verdict, d.sinceLast = true, runrec.Skip, since
		return true
	}
	if jump > 0 {
		r.log.Warn("clock jump: this process's clock fell behind the ZooKeeper server's (a host suspend, a stalled clock, or the ensemble leader's clock stepped forward); the Runner reads the server's clock again from its writes",
			"job", j.key, "behind_at_least", msDuration(jump))
	}
	return false
}

// write sends d's record, conditional on version, and decides by its
// reply.
func (r *Runner) write(ctx context.Context, j *job, p *probe, d decision, version int32) (decision, error) {
	if err := r.enter(p); err != nil {
		return d, err
	}
	// Measured last, as near the send as the Runner can: the read's
	// latency leaves the tick's spread (see the package doc).
	d.rec.Delay = time.Since(p.entry).Milliseconds()
	data := d.rec.Encode()
	sent := time.Now()
	// Through the session's writer, in one multi with the session's other
	// waiting writes (the jobs' locks' creates and deletes, other jobs'
	// records): at a thousand jobs a second, one transaction for many.
	p.ask(r, ctx)
	res, err := r.s.Txn(ctx, &zk.SetDataRequest{Path: j.runPath, Data: data, Version: version})
	p.got(r, err)
	if err != nil {
		return d, fmt.Errorf("runonce: job %q: write run node: %w", j.key, err)
	}
	wrote := res[0].Stat
	if wrote == nil {
		return d, fmt.Errorf("runonce: job %q: write run node: no stat in the reply", j.key)
	}
	answered := time.Since(p.entry)
	r.late.observeRTT(time.Since(sent))
	r.clock.note(wrote.Mtime, runrec.EpochOf(wrote.Mzxid), sent)
	mtime, epoch := wrote.Mtime, runrec.EpochOf(wrote.Mzxid)
	d.wrote, d.verdict = wrote, d.rec.Verdict(mtime, epoch)
	d.decided, d.sinceLast = true, d.rec.Fired(mtime)-d.rec.Last
	if d.verdict == runrec.Run && !d.rec.Confirms(mtime, epoch, answered) {
		// The write counts as a run, but its answer came too late to rule
		// out that the tick ran already: skip (a tick lost, never one run
		// twice).
		d.late = answered
	}
	d.yielded = d.rec.SteppedBack(mtime, epoch)
	j.wrote.Store(true)
	return d, nil
}

// testHookAfterRead, set by tests only, runs between the read and the
// write of a run node.
var testHookAfterRead func(runPath string)

// testHookBeforeCreate, set by tests only, runs in a first claim between
// its lock's take and the run node's create.
var testHookBeforeCreate func()

// testHookAfterTake, set by tests only, runs in Claim between the lock's
// take and the run's Store.
var testHookAfterTake func()

// testHookBeforeRelease, set by tests only, runs in a run's end between
// its removal from the job and its hold's Release.
var testHookBeforeRelease func()

// testHookBeforeJobNodeDelete, set by tests only, runs in RemoveJob right
// before it deletes the job's node.
var testHookBeforeJobNodeDelete func()

// getNode reads path through s (call), giving up when ctx ends.
func getNode(ctx context.Context, s *zklock.Session, p string) ([]byte, *zk.Stat, error) {
	type read struct {
		data []byte
		stat *zk.Stat
	}
	r, err := call(ctx, s, func(conn *zk.Conn) (read, error) {
		data, stat, err := conn.Get(p)
		return read{data, stat}, err
	})
	return r.data, r.stat, err
}

// call runs req through s (zklock.Session.Request), so that the session's
// Close waits for it before closing the connection: req's result, or
// ctx's cause once ctx ended, req then finishing unread in the background.
func call[T any](ctx context.Context, s *zklock.Session, req func(*zk.Conn) (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	err := s.Request(ctx, func(conn *zk.Conn) error {
		v, err := req(conn)
		ch <- result{v, err} // before Request returns req's error
		return err
	})
	select {
	case r := <-ch:
		return r.v, r.err
	default: // not run, or abandoned: what req writes is not read
		var zero T
		return zero, err
	}
}
