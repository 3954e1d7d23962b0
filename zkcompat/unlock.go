package zkcompat

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock"
)

// Unlock releases the hold and, as zk.Lock's does, returns once the
// server has answered the delete of the lock's node: when it returns nil,
// the node is gone. As zk.Lock's does, it returns zk.ErrNotLocked without
// a hold; zk.ErrNoNode when the node was gone before the delete (deleted
// by someone else, or gone with its session), whether or not the loss was
// seen before Unlock; and the error of a delete that did not succeed,
// go-zookeeper's own value: zk.ErrNoAuth when refused,
// zk.ErrConnectionClosed when the connection was lost before the answer.
// It returns an error wrapping tier.ErrLockLost when the hold was lost but
// its node's delete succeeded, and one wrapping zklock.ErrSessionClosed
// after CloseConn. In every case the handle is
// released and can lock again; a node whose delete failed is deleted in
// the background, retried until it or its session is gone.
func (l *Lock) Unlock() error {
	if l == nil {
		return zk.ErrNotLocked
	}
	l.mu.Lock()
	if l.state != holding {
		l.mu.Unlock()
		return zk.ErrNotLocked
	}
	h := l.h
	l.state, l.h = idle, nil
	l.mu.Unlock()

	h.releasing.Store(true)
	h.stop()
	if testHookBeforeRelease != nil {
		testHookBeforeRelease(h.held)
	}
	err := h.e.l.Release(h.held) // queues the node's delete, unless its loss did
	if !h.e.othersOn() {
		// No other handle of the process is on the path, so no create will
		// come soon to carry the delete: it need not wait for one.
		h.e.c.s.Flush()
	}
	delErr := h.e.c.awaitDelete(h.del)
	h.e.done()
	return unlockErr(err, delErr)
}

// testHookNewPath, when a test sets it, is told of every shared lock the
// drop-in makes (TrackDeletesForTest).
var testHookNewPath func(e *pathEntry)

// testHookBeforeRelease, when a test sets it, runs in Unlock right before
// the shared lock is released (SetBeforeReleaseHookForTest).
var testHookBeforeRelease func(held context.Context)

// zk.Lock's Unlock sends the delete of its node and returns the answer:
// once it returns, the node is gone (or the error says why not), and
// zk.ErrNoNode says that someone else deleted it while it was held. The
// shared lock's Release does not wait: the session's writer sends the
// node's delete with the session's next create, on any path, in one multi
// (the next handle's, in a local hand-off), or alone a moment later. So
// Unlock releases, and then waits for that delete's outcome, which zklock
// reports to the lock's delete handler (zklock.WithDeleteHandler): one
// delete per Unlock, batched like any other, and a hold's own-node watch,
// whose hold is released before its node goes, reports no loss. When no
// other handle of the process is on the path, no create is coming to
// carry the delete, and Unlock has it sent at once (zklock.Session.Flush)
// rather than wait that moment for nothing.

// A handle's node and its delete's outcome are matched by the shared
// lock's position reports: the acquisition past the lock's gate (one at a
// time per path) is told where its node stands, the last report of a
// successful one saying that it leads (zklock.WithPositionHandler), on the
// acquiring goroutine, before its hold can end.

// othersOn reports whether another handle of the process is locking the
// path (refs counts the handles locking or holding it, the caller's too).
func (e *pathEntry) othersOn() bool {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return e.refs > 1
}

// deletion is the outcome of the delete of one hold's node.
type deletion struct {
	node     string
	done     chan struct{} // closed once err is set
	err      error
	reported bool // done is closed (under deletions.mu)
}

// deletions routes the delete handler's reports to the handles that wait
// for them, under mu.
type deletions struct {
	mu     sync.Mutex
	leader *deletion            // the node that leads, not yet taken by its handle
	held   map[string]*deletion // nodes taken by handles, their delete not yet reported
}

// onPosition is the shared lock's position handler: it records the node
// that leads, which the handle whose Acquire this is takes once Acquire
// returns (takeLeader). It runs on the acquiring goroutine, the one past
// the lock's gate, so no other acquisition records a node before the
// handle has taken its own; a record that is never taken (the acquisition
// failed after it led) is replaced by the next.
func (e *pathEntry) onPosition(p zklock.Position) {
	if !p.Leads || !strings.HasPrefix(p.Node, e.path+"/") {
		return
	}
	e.dels.mu.Lock()
	e.dels.leader = &deletion{node: p.Node, done: make(chan struct{})}
	e.dels.mu.Unlock()
}

// takeLeader returns the record of the acquisition that has just returned,
// and forgets it, so that it is never taken for another one's; nil when
// none was recorded. Until its delete is reported, the handler finds it
// by its node.
func (e *pathEntry) takeLeader() *deletion {
	d := &e.dels
	d.mu.Lock()
	defer d.mu.Unlock()
	del := d.leader
	d.leader = nil
	if del != nil && !del.reported {
		if d.held == nil {
			d.held = make(map[string]*deletion)
		}
		d.held[del.node] = del
	}
	return del
}

// onDeleted is the shared lock's delete handler (zklock.WithDeleteHandler):
// it gives the outcome to the handle's record, which it forgets. It runs
// on the session's writer or on the goroutine that ended the hold, and
// does not block. A hold that ended before its handle took it (between
// Acquire's return and takeLeader) is still the leader record.
func (e *pathEntry) onDeleted(node string, err error) {
	d := &e.dels
	d.mu.Lock()
	defer d.mu.Unlock()
	del := d.held[node]
	delete(d.held, node)
	if del == nil && d.leader != nil && d.leader.node == node {
		del = d.leader
	}
	if del != nil && !del.reported {
		del.reported = true
		if err != nil {
			err = fmt.Errorf("delete of %s: %w", node, err)
		}
		del.err = err
		close(del.done)
	}
}

// awaitDelete waits for the outcome of the delete that del records (nil:
// none recorded, nil at once). While the session has no connection the
// delete waits in its queue, possibly for long: Unlock then says so
// (zk.ErrConnectionClosed) rather than wait, as zk.Lock's Unlock fails a
// delete that go-zookeeper could not send, and the delete goes out once
// the connection is back (or goes with the session). The session's state
// is read every downPoll: a delete is answered within a round trip, so
// most Unlocks never read it.
func (c *connEntry) awaitDelete(del *deletion) error {
	if del == nil {
		return nil
	}
	select {
	case <-del.done:
		return del.err
	default:
	}
	t := time.NewTicker(downPoll)
	defer t.Stop()
	for {
		if c.s.State() != zklock.StateConnected {
			select {
			case <-del.done: // answered meanwhile
				return del.err
			default:
			}
			return fmt.Errorf("connection lost before the delete of %s was answered (it goes when the connection is back): %w",
				del.node, zk.ErrConnectionClosed)
		}
		select {
		case <-del.done:
			return del.err
		case <-t.C:
		}
	}
}

// downPoll is how often an Unlock whose delete is not answered yet looks
// at the session's state.
const downPoll = 20 * time.Millisecond

// unlockErr is what Unlock returns: as zk.Lock's, its delete's error,
// go-zookeeper's own value when it is one (zk.ErrNoNode when the node was
// gone: deleted by another, or with its session); else the release's
// error (a loss the lock knew of), with the delete's outcome when it was
// not nil.
func unlockErr(relErr, delErr error) error {
	if s := zkSentinel(delErr); s != nil {
		return s
	}
	switch {
	case delErr == nil:
		return relErr
	case relErr != nil:
		return fmt.Errorf("%w; zkcompat: unlock: %w", relErr, delErr)
	}
	return fmt.Errorf("zkcompat: unlock: %w", delErr)
}
