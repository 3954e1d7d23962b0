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

// RemoveJob deletes the nodes of a retired job, one that no instance
// schedules any more (its run node, its lock's path and its own node), so
// that they do not pile up below the root, and forgets the job (its entry
// and its lock) in this Runner. A job that never ran is no error.
//
// No run decides meanwhile: the run node goes only once no attempt can
// still be one of the tick the job last ran, nor of any tick within the
// window of it, since an attempt that found the node gone would go ahead
// as a new job's first run. RemoveJob takes the job's lock without
// waiting (an error matching ErrLockHeld when a run holds it), then waits
// until the last run is twice the window and the lock timeout old by the
// ZooKeeper server's clock, as long as ctx allows, and deletes the node
// conditional on its version. An attempt that finds the node gone runs
// only if its tick fired at most its window before its claim (a late tick
// is not run without a record: ClaimTick), and its read was answered at
// most twice its lock timeout after its claim began (a later one is
// refused): so its timer fired at least a window after the last run's, a
// later tick. The window and the lock
// timeout are the largest of this Runner's (WithWindow, WithLockTimeout)
// and those the run node records, each instance's written by its first
// attempt of the job: whatever each instance's options, a removal never
// makes a tick run twice (TestRemoverWithDefaults,
// TestRemoveWithALongerTimeout), and an attempt cut by the delete is read
// again (TestRemoveCutsAnAttempt).
//
// An instance that attempts the job in the window RemoveJob watches, this
// one included, still schedules it: RemoveJob then deletes nothing (or
// stops where it is, the run node written again) and returns an error
// matching ErrJobActive, as soon as the attempt is seen. Its records mark
// the job as being removed, so that every attempt writes, even one that
// would skip without a write; it waits on a watch of the run node, and
// this instance's own attempts, refused while it holds the job's lock,
// count too (TestRemoveJobSeesItsOwnTicks, TestRemoveJobSeesLocalSkips,
// TestRemoveJobWatches). A lock node of another instance below the job's
// lock is an instance running the job again: ErrJobActive at once
// (TestRemoveJobMeetsARunBack).
//
// A job removed while an instance still schedules it, but whose last run
// is older than that, runs again at its next tick there, as a new job's
// first run: the tick is a later one, so it is not run twice.
func (r *Runner) RemoveJob(ctx context.Context, key string) error {
	if r == nil {
		return ErrNil
	}
	if ctx == nil {
		return ErrNilContext
	}
	dir, err := r.dir(key)
	if err != nil {
		return err
	}
	if r.isClosed() {
		return ErrClosed
	}
	_, _, err = getNode(ctx, r.s, path.Join(dir, runName))
	switch {
	case errors.Is(err, zk.ErrNoNode):
		// Never ran, or removed: no decision to guard, no lock to take.
		return r.nodes.deleteDirs(ctx, key, dir)
	case err != nil:
		return fmt.Errorf("runonce: job %q: read run node: %w", key, err)
	}
	j, done, err := r.jobToRemove(key, dir)
	if err != nil {
		return err
	}
	defer done()
	if !j.busy.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: job %q: by a run of this instance", ErrLockHeld, key)
	}
	rm := &removal{seen: make(chan struct{})}
	j.removal.Store(rm)
	defer func() {
		j.removal.Store(nil)
		j.busy.Store(false)
	}()
	h, ok, err := j.lock.TryAcquire(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("runonce: job %q: %w", key, err)
	case !ok:
		return fmt.Errorf("%w: job %q: by another instance", ErrLockHeld, key)
	}
	err = r.retire(ctx, h, j, rm)
	own := path.Base(h.Node())
	_ = h.Release()
	if err != nil {
		return fmt.Errorf("runonce: job %q: %w", key, err)
	}
	if err := r.nodes.deleteDirs(ctx, key, dir, own, j.ownNode); err != nil {
		return err
	}
	r.forget(j)
	return nil
}

// errAttempted and errWrote (and errRunBack) say what showed the job still
// scheduled.
var (
	errAttempted = fmt.Errorf("%w: this instance attempted it meanwhile", ErrJobActive)
	errWrote     = fmt.Errorf("%w: an instance wrote its run node meanwhile", ErrJobActive)
)

// jobToRemove returns key's entry, or one made for the removal alone and
// closed by done: RemoveJob of a key this instance does not schedule
// leaves nothing behind.
func (r *Runner) jobToRemove(key, dir string) (*job, func(), error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, nil, ErrClosed
	}
	if j := r.jobs[key]; j != nil {
		return j, func() {}, nil
	}
	j, err := r.newJob(key, dir)
	if err != nil {
		return nil, nil, err
	}
	return j, func() { _ = j.lock.Close() }, nil
}

// forget drops j, removed, from the Runner: its entry and its lock (once,
// every removed job stayed in memory). A Claim that holds j
// already finds it retired and takes a new entry.
func (r *Runner) forget(j *job) {
	j.retired.Store(true)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.jobs[j.key] == j {
		delete(r.jobs, j.key)
		_ = j.lock.Close()
	}
}

// retire deletes j's run node, under h, once its last run is twice a
// window and a lock timeout old by the server's clock, the largest
// recorded or this Runner's (see RemoveJob). It learns that clock from a write:
// the node rewritten as it is (runrec.Keep), marked as being removed,
// conditional on the version read, whose mtime is the server's time. Any
// attempt that finds the node gone reads it after the delete, so its timer
// fired after the keeping write less its lock timeout, hence a window
// after the last run: a later tick, which the rule would let run. Any
// attempt that writes the node meanwhile moves its version: the watch set
// after each keeping write ends the wait, and the job is still scheduled.
func (r *Runner) retire(ctx context.Context, h *zklock.Hold, j *job, rm *removal) error {
	data, stat, err := getNode(ctx, r.s, j.runPath)
	for {
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return nil // removed meanwhile
		case err != nil:
			return fmt.Errorf("read run node: %w", err)
		}
		last := runrec.Derive(data, stat.Mtime, stat.Mzxid)
		need := 2 * (max(ms(j.window), last.Window, last.MaxWindow) + max(ms(r.cfg.timeout), last.Timeout))
		window := last.Window // the fleet's, so that the writes read as the fleet's
		if window <= 0 {
			window = ms(j.window) // an unreadable record: this Runner's
		}
		keep := runrec.Keep(last, window, stat.Mtime, stat.Mzxid)
		keep.Timeout, keep.Removing = max(last.Timeout, ms(r.cfg.timeout)), r.by
		res, err := h.Txn(ctx, &zk.SetDataRequest{Path: j.runPath, Data: keep.Encode(), Version: stat.Version})
		if err != nil {
			return retireErr("keep run node", err)
		}
		data, stat = keep.Encode(), res[0].Stat
		quiet := stat.Mtime - runrec.Derive(data, stat.Mtime, stat.Mzxid).At
		if quiet >= need {
			_, err := h.Txn(ctx, &zk.DeleteRequest{Path: j.runPath, Version: stat.Version})
			return retireErr("delete run node", err)
		}
		if err := r.await(ctx, j, rm, stat.Version, msDuration(need-quiet)); err != nil {
			return fmt.Errorf("the last run is %v old, under %v: %w", msDuration(quiet), msDuration(need), err)
		}
		data, stat, err = getNode(ctx, r.s, j.runPath)
	}
}

// await waits d for the run node of j to stay at version: an attempt
// that writes it, one of this instance (rm), or ctx's end, ends the wait
// with an error.
func (r *Runner) await(ctx context.Context, j *job, rm *removal, version int32, d time.Duration) error {
	switch end, err := r.nodes.awaitWrite(ctx, j, version, d, rm.seen); {
	case errors.Is(err, zk.ErrNoNode):
		return errWrote // deleted by another remover: nothing of this one's to delete
	case end == waitLost:
		return nil // the watch lost: the next keeping write looks again
	case err != nil:
		return err
	case end == waitWritten:
		return errWrote
	case end == waitStopped:
		return errAttempted
	}
	return nil // d passed: the next keeping write looks again
}

// retireErr says what a write of retire's came to: nil when the node is
// gone, ErrJobActive when an attempt wrote it since it was read.
func retireErr(what string, err error) error {
	switch {
	case err == nil, errors.Is(err, zk.ErrNoNode):
		return nil
	case errors.Is(err, zk.ErrBadVersion):
		return errWrote
	}
	return fmt.Errorf("%s: %w", what, err)
}
