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

// RemoveJob deletes the nodes of a retired job, one that no instance
// schedules any more (its run node, its lock's path and its own node), so
// that they do not pile up below the root. A job that never ran is no
// error.
//
// No run decides meanwhile: the run node goes only once no attempt can
// still be one of the tick the job last ran, nor of any tick within the
// window of it, since an attempt that found the node gone would go ahead
// as a new job's first run. RemoveJob takes the job's lock without
// waiting (an error matching ErrLockHeld when a run holds it), then waits
// until the last run is a window and a lock timeout old by the ZooKeeper
// server's clock (WithWindow, WithLockTimeout: an attempt's decision comes
// within its lock timeout of its timer), as long as ctx allows, and
// deletes the node conditional on its version. An instance that writes
// the node meanwhile still schedules the job: RemoveJob then deletes
// nothing and returns an error matching ErrJobActive
// (TestRemoveJobWhileScheduled). The argument counts on the fleet's lock
// timeouts being at most this Runner's, as its windows are one value.
//
// A job removed while an instance still schedules it, but whose last run
// is older than that, runs again at its next tick there, as a new job's
// first run: the tick is a later one, so it is not run twice. When that
// run writes its run node before RemoveJob has deleted the job's node,
// RemoveJob leaves it and returns ErrJobActive.
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
	_, _, err = getNode(ctx, r.s.Conn(), path.Join(dir, runName))
	switch {
	case errors.Is(err, zk.ErrNoNode):
		// Never ran, or removed: no decision to guard, no lock to take.
		return r.deleteDirs(ctx, key, dir)
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
	defer j.busy.Store(false)
	h, ok, err := j.lock.TryAcquire(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("runonce: job %q: %w", key, err)
	case !ok:
		return fmt.Errorf("%w: job %q: by another instance", ErrLockHeld, key)
	}
	err = r.retire(ctx, h, j)
	_ = h.Release()
	switch {
	case errors.Is(err, ErrJobActive):
		return fmt.Errorf("%w: job %q: an instance wrote its run node meanwhile", ErrJobActive, key)
	case err != nil:
		return fmt.Errorf("runonce: job %q: %w", key, err)
	}
	return r.deleteDirs(ctx, key, dir)
}

// jobToRemove returns key's entry, or one made for the removal alone and
// closed by done: RemoveJob of a key this instance does not schedule
// leaves nothing behind (issue 43, item 10).
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

// retire deletes j's run node, under h, once its last run is a window and
// a lock timeout old by the server's clock. It learns that clock from a
// write: the node rewritten as it is (runrec.Keep), conditional on the
// version read, whose mtime is the server's time. Any attempt that finds
// the node gone reads it after the delete, so its timer fired after the
// keeping write less its lock timeout, hence a window after the last run:
// a later tick, which the rule would let run. Any attempt that writes the
// node meanwhile moves its version, and the delete is refused.
func (r *Runner) retire(ctx context.Context, h *zklock.Hold, j *job) error {
	need := ms(j.window) + ms(r.cfg.timeout)
	data, stat, err := getNode(ctx, r.s.Conn(), j.runPath)
	for {
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return nil // removed meanwhile
		case err != nil:
			return fmt.Errorf("read run node: %w", err)
		}
		keep := runrec.Keep(runrec.Derive(data, stat.Mtime, stat.Mzxid), ms(j.window), stat.Mtime, stat.Mzxid).Encode()
		res, err := h.Txn(ctx, &zk.SetDataRequest{Path: j.runPath, Data: keep, Version: stat.Version})
		if err != nil {
			return written("keep run node", err)
		}
		data, stat = keep, res[0].Stat
		quiet := stat.Mtime - runrec.Derive(data, stat.Mtime, stat.Mzxid).At
		if quiet >= need {
			_, err := h.Txn(ctx, &zk.DeleteRequest{Path: j.runPath, Version: stat.Version})
			return written("delete run node", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the last run is %v old, under %v: %w", msDuration(quiet), msDuration(need), context.Cause(ctx))
		case <-time.After(msDuration(need - quiet)):
		}
	}
}

// exists reports whether node is there (false when it cannot tell).
func (r *Runner) exists(ctx context.Context, node string) bool {
	ok, err := await.Call(ctx, func() (bool, error) {
		ok, _, err := r.s.Conn().Exists(node)
		return ok, err
	})
	return err == nil && ok
}

// written says what a write of retire's came to: nil when the node is
// gone, ErrJobActive when an attempt wrote it since it was read.
func written(what string, err error) error {
	switch {
	case err == nil, errors.Is(err, zk.ErrNoNode):
		return nil
	case errors.Is(err, zk.ErrBadVersion):
		return ErrJobActive
	}
	return fmt.Errorf("%s: %w", what, err)
}

// deleteDirs deletes the lock's path and the job's node (persistent, see
// createRun) once the hold's node has gone (Release deletes it in the
// background); a lock node queued meanwhile (the job runs again) keeps
// them until it goes. A run node written again below the job's node (an
// instance still schedules the job) would keep it for ever: RemoveJob
// then returns ErrJobActive (TestRemoveJobMeetsARunAgain).
func (r *Runner) deleteDirs(ctx context.Context, key, dir string) error {
	err := r.deleteEmpty(ctx, path.Join(dir, lockName), "")
	if err == nil {
		if testHookBeforeJobNodeDelete != nil {
			testHookBeforeJobNodeDelete()
		}
		err = r.deleteEmpty(ctx, dir, path.Join(dir, runName))
	}
	switch {
	case errors.Is(err, ErrJobActive):
		return fmt.Errorf("%w: job %q: an instance wrote its run node again", ErrJobActive, key)
	case err != nil:
		return fmt.Errorf("runonce: job %q: %w", key, err)
	}
	return nil
}

// deleteEmpty deletes p once it is empty, or until ctx ends; it returns
// ErrJobActive when p holds run, the job's run node ("" for none).
func (r *Runner) deleteEmpty(ctx context.Context, p, run string) error {
	for {
		_, err := await.Call(ctx, func() (struct{}, error) { return struct{}{}, r.s.Conn().Delete(p, -1) })
		switch {
		case err == nil, errors.Is(err, zk.ErrNoNode):
			return nil
		case !errors.Is(err, zk.ErrNotEmpty):
			return fmt.Errorf("delete %s: %w", p, err)
		}
		if run != "" && r.exists(ctx, run) {
			return ErrJobActive
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("delete %s: %w", p, context.Cause(ctx))
		case <-time.After(20 * time.Millisecond):
		}
	}
}
