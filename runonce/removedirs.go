package runonce

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock"
)

// deleteDirs deletes the job's lock path and node (persistent, see
// createRun) once the run node is gone. The lock's path empties when own,
// the nodes of this instance's holds (RemoveJob's, its last run's), have
// gone (their Release deletes them in the background): RemoveJob waits
// for that on a watch. Any other lock node is
// an instance running the job again, and a run node or a lock path made
// again below the job's node an instance still scheduling it: ErrJobActive
// at once (once, RemoveJob waited a run out, sending a delete
// every 20 ms, for as long as the run lasted).
func (st *store) deleteDirs(ctx context.Context, key, dir string, own ...string) error {
	if testHookBeforeLockDelete != nil {
		testHookBeforeLockDelete()
	}
	onlyOwn := func(kids []string) bool {
		for _, k := range kids {
			if k == "" || !slices.Contains(own, k) {
				return false
			}
		}
		return true
	}
	err := st.deleteEmpty(ctx, path.Join(dir, lockName), onlyOwn)
	if err == nil {
		if testHookBeforeJobNodeDelete != nil {
			testHookBeforeJobNodeDelete()
		}
		err = st.deleteEmpty(ctx, dir, func([]string) bool { return false })
	}
	if err != nil {
		return fmt.Errorf("runonce: job %q: %w", key, err)
	}
	return nil
}

// deleteEmpty deletes p once it is empty, waiting on a watch of its
// children while wait says of them that they will go; otherwise
// ErrJobActive.
func (st *store) deleteEmpty(ctx context.Context, p string, wait func(kids []string) bool) error {
	for {
		conn := st.s.Conn()
		if conn == nil {
			return zklock.ErrSessionClosed
		}
		_, err := call(ctx, st.s, func(conn *zk.Conn) (struct{}, error) { return struct{}{}, conn.Delete(p, -1) })
		switch {
		case err == nil, errors.Is(err, zk.ErrNoNode):
			return nil
		case !errors.Is(err, zk.ErrNotEmpty):
			return fmt.Errorf("delete %s: %w", p, err)
		}
		type watched struct {
			kids []string
			ch   <-chan zk.Event
		}
		w, err := call(ctx, st.s, func(conn *zk.Conn) (watched, error) {
			kids, _, ch, err := conn.ChildrenW(p)
			return watched{kids, ch}, err
		})
		switch {
		case errors.Is(err, zk.ErrNoNode):
			continue
		case err != nil:
			return fmt.Errorf("watch %s: %w", p, err)
		case len(w.kids) > 0 && !wait(w.kids):
			return errRunBack
		case len(w.kids) == 0:
			continue
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("delete %s: %w", p, context.Cause(ctx))
		case <-w.ch:
		}
	}
}

// errRunBack says that an instance runs the job again: a lock node of
// another instance below the job's lock.
var errRunBack = fmt.Errorf("%w: an instance runs it again", ErrJobActive)

// testHookBeforeLockDelete, set by tests only, runs in RemoveJob right
// before it deletes the job's lock path.
var testHookBeforeLockDelete func()

// testHookBeforeJobNodeDelete, set by tests only, runs in RemoveJob right
// before it deletes the job's node.
var testHookBeforeJobNodeDelete func()
