package gocronlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
	decided bool          // the write was applied: verdict holds
	yielded bool          // it would have run, but stepped back (WithSpread)
	late    time.Duration // a run not confirmed: its write's answer came this long after Lock's entry
	// sinceLast is the time from the last run to this attempt's timer, by
	// the server's clock (ms).
	sinceLast int64
}

// take takes the job's lock without waiting and claims the tick under it;
// it returns the hold when this instance runs. entry is Lock's entry.
func (l *Locker) take(ctx context.Context, j *job, entry time.Time) (*zklock.Hold, decision, error) {
	h, ok, err := j.lock.TryAcquire(ctx)
	if err != nil {
		return nil, decision{}, fmt.Errorf("gocronlock: job %q: %w", j.key, err)
	}
	if !ok {
		return nil, decision{}, fmt.Errorf("%w: job %q: by another instance", ErrLockHeld, j.key)
	}
	d, err := l.claim(ctx, j, h, entry)
	switch {
	case err == nil && d.late > 0:
		err = fmt.Errorf("gocronlock: job %q: %w: answered %v after Lock's entry, too late to rule out that the tick ran: the tick is lost (counted as run)",
			j.key, ErrSlowWrite, d.late.Round(time.Millisecond))
	case err == nil && d.yielded:
		err = fmt.Errorf("%w: job %q", ErrYielded, j.key)
	case err == nil && d.verdict != runrec.Run:
		err = fmt.Errorf("%w: job %q", ErrAlreadyRan, j.key)
	}
	if err == nil && h.Err() != nil {
		err = fmt.Errorf("gocronlock: job %q: %w", j.key, h.Err())
	}
	if err != nil {
		_ = h.Release() // a lost hold's error says nothing new
		return nil, d, err
	}
	return h, d, nil
}

// claim applies the rule while h holds the job's lock. A version conflict
// (a write this instance did not see) is read again once.
func (l *Locker) claim(ctx context.Context, j *job, h *zklock.Hold, entry time.Time) (decision, error) {
	var d decision
	var err error
	for range 2 {
		d, err = l.attempt(ctx, j, h, entry)
		if !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNodeExists) {
			return d, err
		}
	}
	return d, err
}

// attempt is one read and one guarded write of the run node: the write is
// refused if the hold has ended at the server (the guard) or anyone wrote
// the node since the read (the version), and its reply's Stat (mtime,
// Mzxid) decides, with what it read (runrec.Record.Verdict).
func (l *Locker) attempt(ctx context.Context, j *job, h *zklock.Hold, entry time.Time) (decision, error) {
	d := decision{rec: runrec.Record{Window: ms(j.window), By: l.by}}
	data, stat, err := getNode(ctx, l.s.Conn(), j.runPath)
	if errors.Is(err, zk.ErrNoNode) {
		// The job's first run: nothing before it, so the write runs.
		d.rec.Delay = time.Since(entry).Milliseconds()
		_, err = h.Txn(ctx, &zk.CreateRequest{Path: j.runPath, Data: d.rec.Encode(), Acl: l.cfg.acl})
		if err != nil {
			return d, fmt.Errorf("gocronlock: job %q: create run node: %w", j.key, err)
		}
		d.verdict, d.first, d.decided = runrec.Run, true, true
		return d, nil
	}
	if err != nil {
		return d, fmt.Errorf("gocronlock: job %q: read run node: %w", j.key, err)
	}
	if testHookAfterRead != nil {
		testHookAfterRead(j.runPath, h)
	}
	d.prev = runrec.Derive(data, stat.Mtime, stat.Mzxid)
	d.rec.Last, d.rec.LastBy, d.rec.Runs = d.prev.At, d.prev.By, d.prev.Runs
	d.rec.Prev, d.rec.Epoch = stat.Mtime, runrec.EpochOf(stat.Mzxid)
	if l.cfg.spread {
		d.rec.Recent, d.rec.Since, d.rec.Yield = d.prev.Recent, d.prev.Since, l.yields(d.prev)
	}
	// Measured last, as near the send as the Locker can: the lock's and
	// the read's latency leave the tick's spread (see the package doc).
	d.rec.Delay = time.Since(entry).Milliseconds()
	res, err := h.Txn(ctx, &zk.SetDataRequest{Path: j.runPath, Data: d.rec.Encode(), Version: stat.Version})
	if err != nil {
		return d, fmt.Errorf("gocronlock: job %q: write run node: %w", j.key, err)
	}
	if len(res) != 1 || res[0].Stat == nil {
		return d, fmt.Errorf("gocronlock: job %q: write run node: no stat in the reply", j.key)
	}
	answered := time.Since(entry)
	mtime, epoch := res[0].Stat.Mtime, runrec.EpochOf(res[0].Stat.Mzxid)
	d.verdict = d.rec.Verdict(mtime, epoch)
	d.decided, d.sinceLast = true, d.rec.Fired(mtime)-d.rec.Last
	if d.verdict == runrec.Run && !d.rec.Confirms(mtime, epoch, answered) {
		// The write counts as a run, but its answer came too late to rule
		// out that the tick ran already: skip (a tick lost, never one run
		// twice).
		d.late = answered
	}
	if d.rec.Yield && d.verdict != runrec.Run {
		eager := d.rec
		eager.Yield = false
		d.yielded = eager.Verdict(mtime, epoch) == runrec.Run
	}
	return d, nil
}

// yields reports whether this instance steps back from the tick it is
// about to decide (WithSpread): when it made one of the last k runs, k
// being how many other instances showed themselves alive since the last
// run (the runner, and those that wrote after it). Of k+1 instances one at
// least made none of the last k runs and never steps back, so a tick is
// lost only when that one does not come (it died, or met the lock held);
// the rule decides as ever, so no tick runs twice.
func (l *Locker) yields(prev runrec.Last) bool {
	alive := map[string]bool{}
	for _, n := range append([]string{prev.By}, prev.Since...) {
		if n != "" && n != l.by {
			alive[n] = true
		}
	}
	k := min(len(alive), len(prev.Recent))
	return k > 0 && slices.Contains(prev.Recent[:k], l.by)
}

// testHookAfterRead, set by tests only, runs between the read and the
// write of a run node.
var testHookAfterRead func(runPath string, h *zklock.Hold)

// getNode reads path on conn, giving up when ctx ends. go-zookeeper cannot
// cancel a request: an abandoned read ends on its goroutine when its reply
// comes or the connection closes.
func getNode(ctx context.Context, conn *zk.Conn, p string) ([]byte, *zk.Stat, error) {
	if conn == nil {
		return nil, nil, zklock.ErrSessionClosed
	}
	type result struct {
		data []byte
		stat *zk.Stat
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		data, stat, err := conn.Get(p)
		ch <- result{data, stat, err}
	}()
	select {
	case r := <-ch:
		return r.data, r.stat, r.err
	case <-ctx.Done():
		return nil, nil, context.Cause(ctx)
	}
}
