package runonce

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/runrec"
	"github.com/tierlock/tierlock/zklock"
)

// The rule's application (the package doc states it, internal/runrec
// decides): one read and one write of the run node, conditional on the
// version read, and the job's lock taken for the run. Here, what every
// attempt shares: the write, which decides by its reply, and the lock's
// take before a write. claim.go reads and decides; tick.go decides a
// named tick by the names.

// claimer is what the claims of a Runner work with: its session and the
// jobs' nodes, the gate that Close shuts, the reporter, and the server's
// clock as this instance's writes saw it.
type claimer struct {
	s       *zklock.Session
	nodes   *store
	gate    *gate
	tell    *reporter
	clock   *serverClock
	by      string        // this instance's name, written in the records
	timeout time.Duration // the lock timeout: the bound of a claim
	spread  bool          // WithSpread
}

// errStalled marks a claim's read refused as asked past the claim's lock
// timeout (fresh): its process stalled between its entry and its read.
var errStalled = errors.New("this process stalled")

// fresh returns read's result (nil or zk.ErrNoNode), the read asked at
// asked for p's claim, or a deadline's error: for a read asked more than
// the lock timeout after the claim's entry (this process stalled between
// the two: a stopped process may read after a RemoveJob deleted the job's
// node, and take the tick it ran for a first run), and for one answered
// past the claim's deadline, which is not an answer, as if its wait had
// ended first. So a claim decides on a read answered at most twice its
// lock timeout after its entry (RemoveJob waits for that). The first is
// marked errStalled: the claim, cut by a stall, is told as the record
// read after it shows its tick (stall.go).
func (c *claimer) fresh(ctx context.Context, p *probe, asked time.Time, read error) error {
	switch {
	case asked.Sub(p.entry) > c.timeout:
		return fmt.Errorf("the claim's read asked %v after its entry, past its lock timeout (%v): %w: %w",
			asked.Sub(p.entry).Round(time.Millisecond), c.timeout, errStalled, context.DeadlineExceeded)
	case ctx.Err() != nil:
		return context.Cause(ctx)
	}
	return read
}

// write sends rec, the record of d's attempt, conditional on the version
// read, and decides by its reply: the verdict stands on basis on
// (byClock, or byNames for a named tick).
func (c *claimer) write(ctx context.Context, j *job, p *probe, d decision, rec runrec.Record, on basis) (decision, error) {
	if err := c.gate.enter(p); err != nil {
		return d, err
	}
	// Measured last, as near the send as the Runner can: the read's
	// latency leaves the tick's spread (see the package doc).
	rec.Delay = time.Since(p.entry).Milliseconds()
	data := rec.Encode()
	sent := time.Now()
	// Through the session's writer, in one multi with the session's other
	// waiting writes (the jobs' locks' creates and deletes, other jobs'
	// records): at a thousand jobs a second, one transaction for many.
	p.ask(&c.tell.heard, ctx)
	res, err := c.s.Txn(ctx, &zk.SetDataRequest{Path: j.runPath, Data: data, Version: d.read.stat.Version})
	p.got(&c.tell.heard, err)
	if err != nil {
		return d, fmt.Errorf("runonce: job %q: write run node: %w", j.key, err)
	}
	wrote := res[0].Stat
	if wrote == nil {
		return d, fmt.Errorf("runonce: job %q: write run node: no stat in the reply", j.key)
	}
	answered := time.Since(p.entry)
	c.tell.late.observeRTT(time.Since(sent))
	c.clock.note(wrote.Mtime, runrec.EpochOf(wrote.Mzxid), sent, p.at(time.Now()))
	mtime, epoch := wrote.Mtime, runrec.EpochOf(wrote.Mzxid)
	d.verdict, d.basis = rec.Verdict(mtime, epoch), on
	d.sinceLast = rec.Fired(mtime) - rec.Last
	d.wrote = written{rec: rec, stat: wrote, steppedBack: rec.SteppedBack(mtime, epoch)}
	if d.verdict == runrec.Run && !rec.Confirms(mtime, epoch, answered) {
		// The write counts as a run, but its answer came too late to rule
		// out that the tick ran already: skip (a tick lost, never one run
		// twice).
		d.wrote.late = answered
	}
	j.wrote.Store(true)
	return d, nil
}

// mustWrite reports whether an attempt that would skip without a write
// writes all the same: a RemoveJob waits (it must see the job still
// scheduled), or this Runner has not written the job's record yet (its
// window and lock timeout, which RemoveJob and the other instances read).
func mustWrite(j *job, d decision) bool {
	return d.read.last.Removing != "" || !j.wrote.Load()
}

// keepWrite writes the record d read again as it is, but for this
// Runner's window and lock timeout, rec's (the largest written are kept),
// conditional on its version: never a run, no attempt's writer named.
func (c *claimer) keepWrite(ctx context.Context, j *job, p *probe, d decision, rec runrec.Record) (decision, error) {
	if err := c.gate.enter(p); err != nil {
		return d, err
	}
	stat := d.read.stat
	keep := runrec.Keep(d.read.last, rec.Window, stat.Mtime, stat.Mzxid)
	keep.Timeout, keep.MaxWindow = rec.Timeout, rec.MaxWindow
	p.ask(&c.tell.heard, ctx)
	_, err := c.s.Txn(ctx, &zk.SetDataRequest{Path: j.runPath, Data: keep.Encode(), Version: stat.Version})
	p.got(&c.tell.heard, err)
	if err != nil {
		return d, fmt.Errorf("runonce: job %q: write run node: %w", j.key, err)
	}
	j.wrote.Store(true)
	return d, nil
}

// takeBefore takes j's lock, without waiting, for p's claim before its
// write (a named tick's, a first run's): admitted to writing first (enter),
// an error that says the tick is lost when the take fails.
func (c *claimer) takeBefore(ctx context.Context, j *job, p *probe) (*zklock.Hold, bool, error) {
	if err := c.gate.enter(p); err != nil {
		return nil, false, err
	}
	p.ask(&c.tell.heard, ctx)
	h, ok, err := j.lock.TryAcquire(ctx)
	p.got(&c.tell.heard, err)
	if err != nil {
		return nil, false, fmt.Errorf("runonce: job %q: %w (the tick is lost)", j.key, err)
	}
	return h, ok, nil
}
