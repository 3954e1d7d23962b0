package runonce

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock"
)

// store is the jobs' nodes below the Runner's root, made and read on its
// session with its ACL.
type store struct {
	s    *zklock.Session
	root string
	acl  []zk.ACL

	rootMu   sync.Mutex // held while the root is made (rootReady)
	rootMade bool
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
func (st *store) createRun(ctx context.Context, conn *zk.Conn, j *job, data []byte) error {
	dir := path.Dir(j.runPath)
	multi := func() error {
		_, err := st.s.Txn(ctx, &zk.CreateRequest{Path: dir, Acl: st.acl}, &zk.CreateRequest{Path: j.lock.Path(), Acl: st.acl},
			&zk.CreateRequest{Path: j.runPath, Data: data, Acl: st.acl})
		return err
	}
	if err := st.rootReady(ctx, conn); err != nil {
		return err
	}
	err := multi()
	if errors.Is(err, zk.ErrNoNode) { // the root is gone since: make it, and again
		if err := st.ensure(ctx, conn, st.root); err != nil {
			return err
		}
		err = multi()
	}
	if !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	// The job's node or its lock's path exists (made by zklock, or by an
	// instance whose run node another deleted): the run node alone.
	if err := st.ensure(ctx, conn, j.lock.Path()); err != nil {
		return err
	}
	_, err = call(ctx, st.s, func(conn *zk.Conn) (string, error) { return conn.Create(j.runPath, data, 0, st.acl) })
	return err
}

// rootReady makes the Runner's root once, before its first job's nodes:
// a new fleet's first tick creates a thousand jobs' nodes at once, batched
// in few multis by the session's writer, and each would fail on a missing
// root (the others sent apart, all failing, then made again one by one:
// the first tick lost to the lock timeout). The first new job makes it;
// the others wait for it.
func (st *store) rootReady(ctx context.Context, conn *zk.Conn) error {
	st.rootMu.Lock()
	defer st.rootMu.Unlock()
	if st.rootMade {
		return nil
	}
	if err := st.ensure(ctx, conn, st.root); err != nil {
		return err
	}
	st.rootMade = true
	return nil
}

// ensure makes p if it is missing, persistent, its missing ancestors
// containers.
func (st *store) ensure(ctx context.Context, conn *zk.Conn, p string) error {
	var mk func(p string, flags int32) error
	mk = func(p string, flags int32) error {
		create := func() error {
			_, err := call(ctx, st.s, func(conn *zk.Conn) (string, error) {
				if flags == zk.FlagContainer {
					return conn.CreateContainer(p, nil, flags, st.acl)
				}
				return conn.Create(p, nil, flags, st.acl)
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

// waitEnd is how awaitWrite's wait ended.
type waitEnd int

const (
	waitPassed  waitEnd = iota // d passed
	waitWritten                // the run node was written or deleted since version
	waitStopped                // stop closed
	waitLost                   // the watch ended unwritten (go-zookeeper's EventNotWatching: the session's end)
)

// awaitWrite waits up to d, on a watch of j's run node, for a write of it
// since version (read before): RemoveJob waits out the last run's age
// this way, and an attempt the claim of another instance under way
// (tick.go). The error is the watch's (zk.ErrNoNode: the node is gone),
// or ctx's cause.
func (st *store) awaitWrite(ctx context.Context, j *job, version int32, d time.Duration, stop <-chan struct{}) (waitEnd, error) {
	conn := st.s.Conn()
	if conn == nil {
		return waitPassed, zklock.ErrSessionClosed
	}
	_, stat, ch, err := conn.GetW(j.runPath)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return waitPassed, err
	case err != nil:
		return waitPassed, fmt.Errorf("watch run node: %w", err)
	case stat.Version != version:
		return waitWritten, nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return waitPassed, context.Cause(ctx)
	case <-stop:
		return waitStopped, nil
	case ev := <-ch:
		if ev.Type == zk.EventNodeDataChanged || ev.Type == zk.EventNodeDeleted {
			return waitWritten, nil
		}
		return waitLost, fmt.Errorf("watch run node: ended unwritten: %w", ev.Err) // go-zookeeper sets Err on EventNotWatching
	case <-timer.C:
		return waitPassed, nil
	}
}

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
