package runonce

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/await"
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
	decided bool          // the write was applied: verdict holds
	local   bool          // a skip known without a write (serverClock.recent): verdict Skip
	yielded bool          // it would have run, but stepped back (WithSpread)
	late    time.Duration // a run not confirmed: its write's answer came this long after Claim's entry
	// sinceLast is the time from the last run to this attempt's timer, by
	// the server's clock (ms).
	sinceLast int64
}

// take claims the tick and, when this instance runs it, takes the job's
// lock without waiting for the run; it returns the hold. entry is Claim's
// entry. The decision does not need the lock: the run node's version
// serializes the decisions (attempt). The lock keeps runs from
// overlapping: a run of an earlier tick still going elsewhere makes this
// one skip (ErrLockHeld), its tick counted as run.
func (r *Runner) take(ctx context.Context, j *job, p *probe) (*zklock.Hold, decision, error) {
	d, err := r.decide(ctx, j, p)
	switch {
	case err != nil:
		return nil, d, err
	case d.late > 0:
		return nil, d, fmt.Errorf("runonce: job %q: %w: answered %v after Claim's entry, too late to rule out that the tick ran: the tick is lost (counted as run)",
			j.key, ErrSlowWrite, d.late.Round(time.Millisecond))
	case d.yielded:
		return nil, d, fmt.Errorf("%w: job %q", ErrYielded, j.key)
	case d.verdict != runrec.Run:
		return nil, d, fmt.Errorf("%w: job %q", ErrAlreadyRan, j.key)
	}
	p.ask(r, ctx)
	h, ok, err := j.lock.TryAcquire(ctx)
	p.got(r, err)
	switch {
	case err != nil:
		return nil, d, fmt.Errorf("runonce: job %q: %w (the tick is lost: counted as run)", j.key, err)
	case !ok:
		return nil, d, fmt.Errorf("%w: job %q: by a run of an earlier tick (this tick is lost: counted as run)", ErrLockHeld, j.key)
	}
	return h, d, nil
}

// decide applies the rule. A version conflict (a write this instance did
// not see) is read again and decided afresh, until an attempt decides or
// the Claim's deadline: each conflict is another instance's write that
// went through, so simultaneous timers settle within as many rounds as
// instances race (issue 50, item 8: three rounds at most made a lost race
// a failure, "version conflict", for 27-34 of 72 attempts of eight
// instances under WithSpread). maxConflicts bounds a pathological server.
func (r *Runner) decide(ctx context.Context, j *job, p *probe) (decision, error) {
	var d decision
	var err error
	for range maxConflicts {
		d, err = r.attempt(ctx, j, p)
		if !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNodeExists) {
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
	entry := p.entry
	d := decision{rec: runrec.Record{Window: ms(j.window), By: r.by}}
	p.ask(r, ctx)
	data, stat, err := getNode(ctx, conn, j.runPath)
	read := time.Now()
	p.got(r, err)
	if errors.Is(err, zk.ErrNoNode) {
		// The job's first run: nothing before it, so the write runs
		// (createRun makes its parents, persistent).
		if err := r.enter(p); err != nil {
			return d, err
		}
		d.rec.Delay = time.Since(entry).Milliseconds()
		p.ask(r, ctx)
		err := r.createRun(ctx, conn, j, d.rec.Encode())
		p.got(r, err)
		if err != nil {
			return d, fmt.Errorf("runonce: job %q: create run node: %w", j.key, err)
		}
		d.verdict, d.first, d.decided = runrec.Run, true, true
		return d, nil
	}
	if err != nil {
		return d, fmt.Errorf("runonce: job %q: read run node: %w", j.key, err)
	}
	if testHookAfterRead != nil {
		testHookAfterRead(j.runPath)
	}
	d.prev = runrec.Derive(data, stat.Mtime, stat.Mzxid)
	if !r.cfg.spread {
		rd := clockRead{epoch: runrec.EpochOf(stat.Mzxid), mtime: stat.Mtime, last: d.prev.At, answered: read}
		recent, since, jump := r.clock.recent(rd, entry, d.rec.Window)
		if recent {
			d.local, d.verdict, d.sinceLast = true, runrec.Skip, since // a skip, known without a write
			return d, nil
		}
		if jump > 0 {
			r.log.Warn("clock jump: this process's clock fell behind the ZooKeeper server's (a host suspend, a stalled clock, or the ensemble leader's clock stepped forward); the Runner reads the server's clock again from its writes",
				"job", j.key, "behind_at_least", msDuration(jump))
		}
	}
	d.rec.Last, d.rec.LastBy, d.rec.Runs = d.prev.At, d.prev.By, d.prev.Runs
	d.rec.Prev, d.rec.Epoch = stat.Mtime, runrec.EpochOf(stat.Mzxid)
	if r.cfg.spread {
		d.rec.Recent, d.rec.Since, d.rec.Yield = d.prev.Recent, d.prev.Since, d.prev.Yields(r.by)
	}
	if err := r.enter(p); err != nil {
		return d, err
	}
	// Measured last, as near the send as the Runner can: the read's
	// latency leaves the tick's spread (see the package doc).
	d.rec.Delay = time.Since(entry).Milliseconds()
	data = d.rec.Encode()
	sent := time.Now()
	// Through the session's writer, in one multi with the session's other
	// waiting writes (the jobs' locks' creates and deletes, other jobs'
	// records): at a thousand jobs a second, one transaction for many.
	p.ask(r, ctx)
	res, err := r.s.Txn(ctx, &zk.SetDataRequest{Path: j.runPath, Data: data, Version: stat.Version})
	p.got(r, err)
	if err != nil {
		return d, fmt.Errorf("runonce: job %q: write run node: %w", j.key, err)
	}
	wrote := res[0].Stat
	if wrote == nil {
		return d, fmt.Errorf("runonce: job %q: write run node: no stat in the reply", j.key)
	}
	answered := time.Since(entry)
	r.clock.note(wrote.Mtime, runrec.EpochOf(wrote.Mzxid), sent)
	mtime, epoch := wrote.Mtime, runrec.EpochOf(wrote.Mzxid)
	d.verdict = d.rec.Verdict(mtime, epoch)
	d.decided, d.sinceLast = true, d.rec.Fired(mtime)-d.rec.Last
	if d.verdict == runrec.Run && !d.rec.Confirms(mtime, epoch, answered) {
		// The write counts as a run, but its answer came too late to rule
		// out that the tick ran already: skip (a tick lost, never one run
		// twice).
		d.late = answered
	}
	d.yielded = d.rec.SteppedBack(mtime, epoch)
	return d, nil
}

// createRun creates the job's run node with data, in one transaction with
// the job's node and its lock's path when these are missing (a new job:
// one round trip, which matters when a thousand jobs start at once). Both
// are persistent: zklock would make the lock's path a container, which
// the server removes once empty (between two runs, with its check
// interval short), and a lock whose path is gone must make it again
// before it can queue, which under a burst of runs takes longer than Claim
// may. RemoveJob deletes them. The root and its ancestors are containers,
// as zklock makes a lock's.
func (r *Runner) createRun(ctx context.Context, conn *zk.Conn, j *job, data []byte) error {
	dir := path.Dir(j.runPath)
	multi := func() error {
		_, err := r.s.Txn(ctx, &zk.CreateRequest{Path: dir, Acl: r.cfg.acl}, &zk.CreateRequest{Path: j.lock.Path(), Acl: r.cfg.acl},
			&zk.CreateRequest{Path: j.runPath, Data: data, Acl: r.cfg.acl})
		return err
	}
	if err := r.rootReady(ctx, conn); err != nil {
		return err
	}
	err := multi()
	if errors.Is(err, zk.ErrNoNode) { // the root is gone since: make it, and again
		if err := r.ensure(ctx, conn, r.root); err != nil {
			return err
		}
		err = multi()
	}
	if !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	// The job's node or its lock's path exists (made by zklock, or by an
	// instance whose run node another deleted): the run node alone.
	if err := r.ensure(ctx, conn, j.lock.Path()); err != nil {
		return err
	}
	_, err = await.Call(ctx, func() (string, error) { return conn.Create(j.runPath, data, 0, r.cfg.acl) })
	return err
}

// rootReady makes the Runner's root once, before its first job's nodes:
// a new fleet's first tick creates a thousand jobs' nodes at once, batched
// in few multis by the session's writer, and each would fail on a missing
// root (the others sent apart, all failing, then made again one by one:
// the first tick lost to the lock timeout). The first new job makes it;
// the others wait for it.
func (r *Runner) rootReady(ctx context.Context, conn *zk.Conn) error {
	r.rootMu.Lock()
	defer r.rootMu.Unlock()
	if r.rootMade {
		return nil
	}
	if err := r.ensure(ctx, conn, r.root); err != nil {
		return err
	}
	r.rootMade = true
	return nil
}

// ensure makes p if it is missing, persistent, its missing ancestors
// containers.
func (r *Runner) ensure(ctx context.Context, conn *zk.Conn, p string) error {
	var mk func(p string, flags int32) error
	mk = func(p string, flags int32) error {
		create := func() error {
			_, err := await.Call(ctx, func() (string, error) {
				if flags == zk.FlagContainer {
					return conn.CreateContainer(p, nil, flags, r.cfg.acl)
				}
				return conn.Create(p, nil, flags, r.cfg.acl)
			})
			return err
		}
		err := create()
		if errors.Is(err, zk.ErrNoNode) && path.Dir(p) != "/" {
			if err := mk(path.Dir(p), zk.FlagContainer); err != nil {
				return err
			}
			err = create()
		}
		if errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		return err
	}
	return mk(p, 0)
}

// testHookAfterRead, set by tests only, runs between the read and the
// write of a run node.
var testHookAfterRead func(runPath string)

// testHookAfterTake, set by tests only, runs in Claim between the lock's
// take and the run's Store.
var testHookAfterTake func()

// testHookBeforeJobNodeDelete, set by tests only, runs in RemoveJob right
// before it deletes the job's node.
var testHookBeforeJobNodeDelete func()

// getNode reads path on conn, giving up when ctx ends.
func getNode(ctx context.Context, conn *zk.Conn, p string) ([]byte, *zk.Stat, error) {
	if conn == nil {
		return nil, nil, zklock.ErrSessionClosed
	}
	type read struct {
		data []byte
		stat *zk.Stat
	}
	r, err := await.Call(ctx, func() (read, error) {
		data, stat, err := conn.Get(p)
		return read{data, stat}, err
	})
	return r.data, r.stat, err
}
