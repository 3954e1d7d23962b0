package runonce

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tierlock/tierlock/internal/mono"
	"github.com/tierlock/tierlock/internal/runrec"
	"github.com/tierlock/tierlock/zklock"
)

// A stall of this process: it was stopped (a SIGSTOP, a suspend) and ran
// nothing meanwhile. The process measures it by its monotonic clock's
// jump (internal/mono's watch, which the session keeps running): its
// start and its length, as zklock's lines tell them too.
//
// Stopped past its session timeout, it finds, when it resumes, its
// session's connection cut and its session expired, and its Claims fail
// until a new session connects: that is no outage of ZooKeeper, which
// answered all along. An outage that begins within stallMemory of a stall
// is the stall's: told as the session's connection lost while this
// process was stopped, its end as the session's return, counted from the
// stall's start, with the stall's length and whether the session was
// replaced (it expired).
//
// A claim the stall cut (under way when it began, or made as the process
// resumed, a scheduler's replays among them) fails on its deadline, and
// the fleet ran its tick meanwhile: its failure would be told for a tick
// that ran. Such a claim reads the run node once more, after the stall,
// and is told as the record shows its tick: run by another instance
// (ErrAlreadyRan; ErrStale for a late tick), not run (its failure stands:
// this instance could not run it, and no instance did), or not told
// (ErrTickUnknown: for a claim without a tick, the record's runs since
// cannot be told from its tick's). That read never runs the tick: a claim
// past its lock timeout decides nothing on a read (fresh).

// stallSlack is how long past its lock timeout a Claim may return without
// having stalled (its last steps, on a busy machine).
const stallSlack = time.Second

// cutByStall reports whether p's claim, failed with err, was cut by a
// stall of this process: its read refused for one (fresh), the claim
// outlived its lock timeout (it returns within it unless its process
// stopped), or a stall measured since stallMemory before its entry.
func (c *claimer) cutByStall(p *probe, err error) bool {
	now := time.Now()
	if errors.Is(err, errStalled) || now.Sub(p.entry) > c.timeout+stallSlack {
		return true
	}
	_, ok := mono.StallIn(p.entry.Add(-stallMemory), now)
	return ok
}

// afterStall returns what p's claim of j, failed with err, tells: when a
// stall of this process cut it, what the run node, read afresh (within
// another lock timeout), shows of its tick; err otherwise, and when the
// read fails or finds no node.
func (c *claimer) afterStall(ctx context.Context, j *job, p *probe, err error) error {
	if outcomeOf(err) != Failed || ctx.Err() != nil || errors.Is(err, ErrClosed) ||
		errors.Is(err, zklock.ErrSessionClosed) || !c.cutByStall(p, err) {
		return err
	}
	readCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	data, stat, rerr := getNode(readCtx, c.s, j.runPath)
	if rerr != nil {
		return err
	}
	c.tell.heard.note(nil)
	c.tell.out.reached()
	return c.toldByRecord(j, p, runrec.Derive(data, stat.Mtime, stat.Mzxid), err)
}

// toldByRecord returns what p's claim of j, cut by a stall (err), tells by
// the record read after it (last).
func (c *claimer) toldByRecord(j *job, p *probe, last runrec.Last, err error) error {
	w := ms(p.window)
	switch {
	case p.name == 0 && last.At == 0:
		return err // no run recorded
	case p.name == 0:
		return fmt.Errorf("%w: job %q: this process stalled past the claim's lock timeout, and a claim without a tick cannot be told from the runs its record shows since (the last by %s) (the claim: %v)",
			ErrTickUnknown, j.key, last.By, err)
	case !c.ranElsewhere(p, last, w):
		if last.Open(p.name, w) || p.entered {
			// Not run; or a run this claim may have written itself, which
			// counts and was not made: a tick lost.
			return err
		}
		return c.tell.unknown(j, p, "this process stalled past the claim's lock timeout, and the job's record, read since, neither names the tick run nor leaves it open")
	case p.lateBy > 0:
		return c.tell.staleTick(j, p)
	}
	return fmt.Errorf("%w: job %q: its tick of %s ran, by %s, while this process stalled past the claim's lock timeout (the record, read since, names it) (the claim: %v)",
		ErrAlreadyRan, j.key, tickString(p.name), ranBy(p, last, w), err)
}

// ranElsewhere reports whether last, the record read after p's claim
// stalled, shows p's tick run by another claim than p's: any run of it
// when p's claim wrote nothing (it was not admitted to writing), else
// only the latest, by another instance.
func (c *claimer) ranElsewhere(p *probe, last runrec.Last, w int64) bool {
	if !p.entered {
		return last.RanTick(p.name, w)
	}
	return last.By != c.by && last.Tick != 0 && p.name-last.Tick < w && last.Tick-p.name < w
}

// ranBy names the instance whose run of p's tick last shows, when it is
// the latest run.
func ranBy(p *probe, last runrec.Last, w int64) string {
	if last.Tick != 0 && p.name-last.Tick < w && last.Tick-p.name < w {
		return last.By
	}
	return "an instance the record no longer names"
}
