package runonce

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/runrec"
)

// awaitClaim decides what a lock found held means for d's attempt (of a
// tick open, by the record read). A holder whose lock node was made after
// the write of the last run the record shows (its Czxid above that
// write's zxid: ZooKeeper's order, no clock) is not a run of an earlier
// named tick, whose take precedes its write, but another instance's claim
// between its take and its write: it may run the tick, step back or fail.
// A run without a tick (Claim) writes before it takes, though: its lock
// is younger than its write, and it is told apart by its instance and its
// time (namelessHold). Writes that are not runs (an instance's first keep
// write, a step back) may come between a claim's take and its write,
// which they refuse: the claim then decides again and may still run the
// tick. The attempt waits for that claim's write by the holder's bounds,
// not its own: the holder's claim began before its node, so before it
// was seen, and writes within its lock timeout (the largest the record
// shows, or this instance's), unless this claim's own ends first (an
// eighth of its lock timeout left to decide again). A holder this
// instance has told already (j.held) is not looked at again. It returns
// errDecideAgain when the run node was written since or the holder has
// let the lock go, ctx's cause when ctx ended, ErrTickUnknown when this
// claim's time ran out while the holder could still write (it may run the
// tick), and nil when the wait does not apply or the holder's bound
// passed: the tick is lost to the lock.
func (c *claimer) awaitClaim(ctx context.Context, j *job, p *probe, d decision) error {
	seen := time.Now()
	holder := d.lock.holder
	if holder == "" || holder == j.held.node || d.read.last.Removing != "" {
		return nil
	}
	data, hold, err := getNode(ctx, c.s, path.Join(j.lock.Path(), holder))
	if testHookHolderRead != nil && err == nil {
		err = testHookHolderRead()
	}
	if underWay, err := c.claimUnderWay(ctx, j, p, d, data, hold, err); !underWay {
		return err
	}
	return c.awaitHolderWrite(ctx, j, p, d, seen)
}

// claimUnderWay reports whether the holder of j's lock, whose node read
// gave data, hold and err, may be another instance's claim of p's tick
// between its take and its write; when it is not, the error awaitClaim
// returns (nil: the tick is lost to the lock).
func (c *claimer) claimUnderWay(ctx context.Context, j *job, p *probe, d decision, data []byte, hold *zk.Stat, err error) (bool, error) {
	holder, stat, last := d.lock.holder, d.read.stat, d.read.last
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return false, errDecideAgain // let go since the take
	case ctx.Err() != nil:
		return false, context.Cause(ctx)
	case err != nil:
		// Unread, the holder may be a claim of this tick under way: not lost.
		return false, c.tell.unknown(j, p, fmt.Sprintf("the job's lock is held by %s, whose node this claim could not read (%v): it may be another instance's claim of the tick, which may run it", holder, err))
	case hold.Czxid <= lastRunZxid(d.read):
		// Taken before the last run's write: that run's or an earlier one's.
		c.tell.log.Debug("the job's lock is an earlier run's: taken before the last run's write", "job", j.key, "tick", tickString(p.name),
			"holder", holder, "lock_zxid", hold.Czxid, "run_zxid", last.RunZxid, "record_zxid", stat.Mzxid, "record_version", stat.Version)
		return false, nil
	case namelessHold(last, instanceOf(data), hold.Ctime, p.name, ms(p.window)):
		c.tell.log.Debug("the job's lock is the last run's, a run without a tick, which takes it after its write", "job", j.key, "tick", tickString(p.name),
			"holder", holder, "by", last.By, "lock_zxid", hold.Czxid, "run_zxid", last.RunZxid)
		return false, nil
	}
	return true, nil
}

// namelessHold reports whether a lock node of instance, made at ctime by
// the server's clock, is the hold of last, the record's last run, when
// that run had no tick: a claim without one writes the record, then takes
// the lock. The record says so (such a run's tick is its fire, and the
// floor below which no tick can be told), the holder is the instance that
// made the run, and it took the lock, by its own clock (the run's start by
// the server's clock less its fire by the instance's gives the offset),
// half a window or more before the tick p claims: a claim of that tick
// fires at its tick or after it, so the holder is not one. Or, that
// instance's clock ahead of this one's (its fire at least a window after
// the tick p claims), it took the lock within half a window of that run's
// start, both by the server's clock: its own claim of a tick a window from
// its fire (nearer, it already ran) takes the lock a window after it at
// least.
func namelessHold(last runrec.Last, instance string, ctime, name, window int64) bool {
	if !last.Unnamed() || instance == "" || instance != last.By {
		return false
	}
	took := ctime - (last.At - last.Tick)
	return took < name-window/2 || (last.Tick-name >= window && ctime-last.At < window/2)
}

// awaitHolderWrite waits, for d's attempt of p's tick, for the write of
// the claim under way that holds j's lock, seen at seen (awaitClaim).
func (c *claimer) awaitHolderWrite(ctx context.Context, j *job, p *probe, d decision, seen time.Time) error {
	holder, stat := d.lock.holder, d.read.stat
	until := seen.Add(max(msDuration(d.read.last.Timeout), c.timeout))
	own := p.entry.Add(c.timeout - c.timeout/8)
	cut := own.Before(until)
	if cut {
		until = own
	}
	if left := time.Until(until); left > 0 {
		end, err := c.nodes.awaitWrite(ctx, j, stat.Version, left, nil)
		switch {
		case ctx.Err() != nil:
			return err
		case end == waitWritten || errors.Is(err, zk.ErrNoNode):
			return errDecideAgain
		case err != nil:
			return c.tell.unknown(j, p, fmt.Sprintf("another instance's claim of it (%s) had taken the job's lock and not yet written its record, and this claim could not watch for that write (%v): it may run it", holder, err))
		}
	}
	if cut {
		return c.tell.unknown(j, p, fmt.Sprintf("another instance's claim of it (%s) had taken the job's lock and not yet written its record when this claim's lock timeout (%v) ran out: it may run it", holder, c.timeout))
	}
	return nil
}
