package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/robfig/cron/v3"

	"github.com/tierlock/tierlock/internal/runrec"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// An instance of a version before the tick names (-old-record): each
// fire claimed as runonce did before e2b5ae4, through cronlock's
// Wrap (the Cron attached unless -form loose). A fire more than its window
// (100 ms at least) after its tick (Entry.Prev) by this host's clock is
// stale, skipped without a request. Otherwise it reads the run node by the
// old fields alone, looks at the job's lock (held: it steps back), writes
// the old fields back conditional on the version read (again from the
// read on a conflict), and decides by the server's clock (runrec's Verdict
// and Confirms of a record without a tick are the old ones). A confirmed
// run takes the job's lock (TryAcquire), runs and releases it; a write
// that counted as a run not made (answered too late, the lock taken since
// the look) is written again as the state it read (the old unCount).

// oldRecord is a run node's record as runonce wrote it before e2b5ae4
// (without WithSpread; Removing was RemoveJob's alone).
type oldRecord struct {
	Last    int64  `json:"last"`
	LastBy  string `json:"last_by,omitempty"`
	Runs    int64  `json:"runs,omitempty"`
	Window  int64  `json:"window_ms"`
	Timeout int64  `json:"timeout_ms,omitempty"`
	Delay   int64  `json:"delay_ms,omitempty"`
	Prev    int64  `json:"prev_mtime,omitempty"`
	Epoch   int64  `json:"prev_epoch,omitempty"`
	By      string `json:"by,omitempty"`
	Yield   bool   `json:"yield,omitempty"`
}

func (o oldRecord) encode() []byte {
	b, _ := json.Marshal(o) // ints, strings and a bool cannot fail
	return b
}

// record is o as a runrec.Record: without a tick, its Verdict and
// Confirms are the old version's.
func (o oldRecord) record() runrec.Record {
	return runrec.Record{Last: o.Last, LastBy: o.LastBy, Runs: o.Runs, Window: o.Window, Timeout: o.Timeout, Delay: o.Delay,
		Prev: o.Prev, Epoch: o.Epoch, By: o.By, Yield: o.Yield}
}

// oldOf decodes a run node's data as the old version did: its fields
// alone (none, when the data is no record).
func oldOf(data []byte) (o oldRecord) {
	if json.Unmarshal(data, &o) != nil {
		return oldRecord{}
	}
	return o
}

// oldDerive is the old version's Derive: the state a run node's data and
// Stat leave, by the old fields (no record: a run at its mtime).
func oldDerive(data []byte, mtime, mzxid int64) runrec.Last {
	return runrec.Derive(oldOf(data).encode(), mtime, mzxid)
}

// oldNext is the record an old writer by, of window w and lock timeout
// t, writes after reading prev from a node of mtime and mzxid: Delay is
// set last, at the send; held makes it a step back.
func oldNext(prev runrec.Last, mtime, mzxid int64, w, t time.Duration, by string, held bool) oldRecord {
	return oldRecord{Last: prev.At, LastBy: prev.By, Runs: prev.Runs, Window: oldMs(w), Timeout: oldMs(t),
		Prev: mtime, Epoch: runrec.EpochOf(mzxid), By: by, Yield: held}
}

// oldMs returns d in whole milliseconds, at least 1 (runonce's ms).
func oldMs(d time.Duration) int64 { return max(d.Milliseconds(), 1) }

// oldLock is an old instance's jobs on its session.
type oldLock struct {
	s        *zklock.Session
	c        Config
	log      *slog.Logger
	timeout  time.Duration // the lock timeout: the claim's deadline
	jobs     []*oldJob
	lockOpts []zklock.Option
}

// openOldRecord connects to ZooKeeper for an old instance (-old-record).
func openOldRecord(ctx context.Context, c Config) (Lock, error) {
	sopts := []zklock.SessionOption{zklock.WithLogger(c.Logger)}
	if c.SessionTimeout > 0 {
		sopts = append(sopts, zklock.WithSessionTimeout(c.SessionTimeout))
	}
	s, err := zklock.Connect(ctx, c.Servers, sopts...)
	if err != nil {
		return Lock{}, err
	}
	l := &oldLock{s: s, c: c, log: c.Logger.With("old_record", true), timeout: runonce.DefaultLockTimeout}
	if c.LockTimeout > 0 {
		l.timeout = c.LockTimeout
	}
	label, _ := json.Marshal(struct { // the old lock label
		Instance       string `json:"runonce"`
		SessionTimeout int64  `json:"session_timeout_ms,omitempty"`
	}{c.Instance, s.LeaseStats().Timeout.Milliseconds()})
	l.lockOpts = []zklock.Option{zklock.WithLabel(string(label))}
	return Lock{Wrap: l.wrap, Attach: l.attach, Close: l.close}, nil
}

// oldJob is one job of an old instance: cron.Job, claiming each fire.
type oldJob struct {
	l                 *oldLock
	name              string
	runPath, lockPath string
	window            time.Duration
	lock              *zklock.Lock
	next              cron.Job
	cron              *cron.Cron // attached (attach), before the Cron starts
	entry             cron.EntryID
	busy              atomic.Bool
	own               string // the node of this instance's last hold, under busy
}

func (l *oldLock) wrap(name string, job cron.Job) cron.Job {
	w, ok := l.c.Windows[name]
	switch {
	case !ok && l.c.Window > 0:
		w = l.c.Window
	case !ok:
		w = runonce.DefaultWindow
	}
	dir := path.Join(l.c.Root, name) // the fleet's names need no escaping
	j := &oldJob{l: l, name: name, runPath: path.Join(dir, "run"), lockPath: path.Join(dir, "lock"), window: w, next: job}
	j.lock, _ = zklock.New(l.s, j.lockPath, l.lockOpts...) // the fleet's paths are valid: nil would fail each claim (ErrNil)
	l.jobs = append(l.jobs, j)
	return j
}

// attach finds the old jobs among c's entries (through the wrappers that
// unwrap), for their fires' ticks (the old Attach).
func (l *oldLock) attach(c *cron.Cron) {
	for _, e := range c.Entries() {
		for job := e.Job; job != nil; {
			if j, ok := job.(*oldJob); ok {
				j.cron, j.entry = c, e.ID
				break
			}
			u, ok := job.(interface{ Unwrap() cron.Job })
			if !ok {
				break
			}
			job = u.Unwrap()
		}
	}
}

func (l *oldLock) close() error {
	var errs []error
	for _, j := range l.jobs {
		if j.lock != nil {
			errs = append(errs, j.lock.Close())
		}
	}
	return errors.Join(append(errs, l.s.Close())...)
}

// Run claims the fire, runs the job if it is this instance's, and tells
// the outcome.
func (j *oldJob) Run() {
	entry := time.Now()
	outcome := "held" // a fire while this instance's claim of the job goes on
	if j.busy.CompareAndSwap(false, true) {
		var h *zklock.Hold
		outcome, h = j.claim(entry)
		if h != nil {
			j.next.Run()
			_ = h.Release() // a hold lost meanwhile is gone already
		}
		j.busy.Store(false)
	}
	if j.l.c.Observe != nil {
		j.l.c.Observe(j.name, outcome, time.Time{})
	}
}

// oldDecision is what one claim read, wrote and decided.
type oldDecision struct {
	prev    runrec.Last
	rec     oldRecord
	wrote   *zk.Stat // its write's Stat; nil when it created the node
	verdict runrec.Verdict
	late    bool // a run not confirmed
	stepped bool // a step back from a run (the lock held)
}

// claim decides the fire that entered at entry, and returns its outcome
// and, when it runs, its hold of the job's lock.
func (j *oldJob) claim(entry time.Time) (string, *zklock.Hold) {
	if j.stale(entry) {
		return "stale", nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), j.l.timeout)
	defer cancel()
	d, err := j.decide(ctx, entry)
	switch {
	case err != nil:
		j.l.log.Warn("old record: claim failed", "job", j.name, "err", err)
		return "failed", nil
	case d.late:
		j.unCount(ctx, d)
		return "failed", nil
	case d.stepped:
		return "held", nil
	case d.verdict != runrec.Run:
		return "already_ran", nil
	}
	h, ok, err := j.lock.TryAcquire(ctx)
	if err != nil || !ok {
		j.unCount(ctx, d)
		if err != nil {
			return "failed", nil
		}
		return "held", nil
	}
	j.own = path.Base(h.Node())
	return "ran", h
}

// stale reports whether the fire is a tick more than its window (100 ms
// at least) late, by this host's clock: the old ClaimTick's skip.
func (j *oldJob) stale(entry time.Time) bool {
	if j.cron == nil {
		return false
	}
	tick := j.cron.Entry(j.entry).Prev
	return !tick.IsZero() && entry.Round(0).Sub(tick) > max(j.window, 100*time.Millisecond)
}

// decide reads and writes until a write is applied (or fails otherwise).
func (j *oldJob) decide(ctx context.Context, entry time.Time) (d oldDecision, err error) {
	for range 64 {
		if d, err = j.attempt(ctx, entry); !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNodeExists) {
			return d, err
		}
	}
	return d, err
}

// attempt is one read of the run node and one write conditional on it.
func (j *oldJob) attempt(ctx context.Context, entry time.Time) (oldDecision, error) {
	var d oldDecision
	got, err := j.get(ctx)
	if errors.Is(err, zk.ErrNoNode) {
		return j.first(ctx, entry)
	}
	if err != nil {
		return d, err
	}
	d.prev = oldDerive(got.data, got.stat.Mtime, got.stat.Mzxid)
	held, err := j.held(ctx)
	if err != nil {
		return d, err
	}
	d.rec = oldNext(d.prev, got.stat.Mtime, got.stat.Mzxid, j.window, j.l.timeout, j.l.c.Instance, held)
	d.rec.Delay = time.Since(entry).Milliseconds()
	res, err := j.l.s.Txn(ctx, &zk.SetDataRequest{Path: j.runPath, Data: d.rec.encode(), Version: got.stat.Version})
	if err != nil {
		return d, err
	}
	answered := time.Since(entry)
	if d.wrote = res[0].Stat; d.wrote == nil {
		return d, errors.New("old record: no stat in the write's reply")
	}
	mtime, epoch := d.wrote.Mtime, runrec.EpochOf(d.wrote.Mzxid)
	rec := d.rec.record()
	d.verdict = rec.Verdict(mtime, epoch)
	d.late = d.verdict == runrec.Run && !rec.Confirms(mtime, epoch, answered)
	d.stepped = rec.SteppedBack(mtime, epoch)
	return d, nil
}

// first makes the job's run node, its first run, with the job's node and
// its lock's in one multi, as the old createRun did; when the root is
// missing or the job's node is there, their parts first, then the run
// node alone.
func (j *oldJob) first(ctx context.Context, entry time.Time) (oldDecision, error) {
	d := oldDecision{rec: oldRecord{Window: oldMs(j.window), Timeout: oldMs(j.l.timeout), By: j.l.c.Instance}, verdict: runrec.Run}
	acl := zk.WorldACL(zk.PermAll)
	d.rec.Delay = time.Since(entry).Milliseconds()
	run := &zk.CreateRequest{Path: j.runPath, Data: d.rec.encode(), Acl: acl}
	_, err := j.l.s.Txn(ctx, &zk.CreateRequest{Path: path.Dir(j.runPath), Acl: acl}, &zk.CreateRequest{Path: j.lockPath, Acl: acl}, run)
	if !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrNodeExists) {
		return d, err
	}
	parts := strings.Split(strings.TrimPrefix(j.lockPath, "/"), "/")
	for i := range parts {
		p := "/" + path.Join(parts[:i+1]...)
		if _, err := oldCall(ctx, j.l.s, func(conn *zk.Conn) (string, error) { return conn.Create(p, nil, 0, acl) }); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return d, err
		}
	}
	_, err = j.l.s.Txn(ctx, run)
	return d, err
}

// held reports whether another than this instance's last hold holds the
// job's lock (the old look before the write).
func (j *oldJob) held(ctx context.Context) (bool, error) {
	kids, err := oldCall(ctx, j.l.s, func(conn *zk.Conn) ([]string, error) {
		kids, _, err := conn.Children(j.lockPath)
		return kids, err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return false, nil
	case err != nil:
		return false, err
	}
	first, low := "", int32(-1)
	for _, k := range kids {
		if _, seq, ok := zklock.Contender(k); ok && (low < 0 || seq < low) {
			first, low = k, seq
		}
	}
	return first != "" && first != j.own, nil
}

// unCount writes d's write, which counted as a run not made, again as
// the state it read, unless a later write moved the last run (the old
// unCount).
func (j *oldJob) unCount(ctx context.Context, d oldDecision) {
	if d.wrote == nil {
		return
	}
	fired := d.rec.record().Fired(d.wrote.Mtime)
	cur, stat := oldDerive(d.rec.encode(), d.wrote.Mtime, d.wrote.Mzxid), d.wrote
	for range 3 {
		if cur.At != fired || cur.By != j.l.c.Instance {
			return
		}
		fix := cur
		fix.At, fix.By, fix.Runs = d.prev.At, d.prev.By, d.prev.Runs
		keep := oldOf(runrec.Keep(fix, oldMs(j.window), stat.Mtime, stat.Mzxid).Encode())
		_, err := j.l.s.Txn(ctx, &zk.SetDataRequest{Path: j.runPath, Data: keep.encode(), Version: stat.Version})
		if !errors.Is(err, zk.ErrBadVersion) {
			return
		}
		got, err := j.get(ctx)
		if err != nil {
			return
		}
		cur, stat = oldDerive(got.data, got.stat.Mtime, got.stat.Mzxid), got.stat
	}
}

// oldGot is a read's data and Stat.
type oldGot struct {
	data []byte
	stat *zk.Stat
}

// get reads the job's run node.
func (j *oldJob) get(ctx context.Context) (oldGot, error) {
	return oldCall(ctx, j.l.s, func(conn *zk.Conn) (oldGot, error) {
		data, stat, err := conn.Get(j.runPath)
		return oldGot{data, stat}, err
	})
}

// oldCall runs req through s (zklock.Session.Request): its result, or
// ctx's cause once ctx ended (req then finishing unread).
func oldCall[T any](ctx context.Context, s *zklock.Session, req func(*zk.Conn) (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	err := s.Request(ctx, func(conn *zk.Conn) error {
		v, err := req(conn)
		ch <- result{v, err}
		return err
	})
	select {
	case r := <-ch:
		return r.v, r.err
	default:
		var zero T
		return zero, err
	}
}
