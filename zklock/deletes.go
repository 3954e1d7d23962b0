package zklock

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/zklock/internal/wire"
)

// The delete queue: a released node's delete waits for the session's next
// create, or for the flusher, and is guaranteed (deleteGuaranteed, below): retried
// until the node or its session is gone.

func (q *deleteQueue) init(s *Session) {
	q.s = s
	q.byPath = make(map[string]*pendingDelete)
}

// add schedules the delete of node, released or abandoned on the
// lock at path. It does not wait: the delete goes with the session's next
// create, or with the flusher foldWait later. Either way it is
// guaranteed: retried, whatever the error, until the node is gone or its
// session is over.
func (q *deleteQueue) add(path, node string, owner int64) {
	d := &pendingDelete{path: path, node: node, owner: owner}
	if q.s.cfg.noPipelining || q.s.tap == nil {
		trace.DelAdded(q.s.conn, path, node)
		q.serial(d)
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	trace.DelAdded(q.s.conn, path, node) // under q.mu: recorded in the queue's order, as take and flush record
	if old := q.byPath[path]; old != nil && old.sent == nil {
		// Two Locks of the session on one path, both releasing before
		// either delete went out: the older one goes on its own, taken
		// here so that the flusher does not send it a second time.
		q.takenLocked(old)
		q.sendAlone(old)
	}
	q.byPath[path] = d
	q.order = append(q.order, d)
	q.untaken++
	switch {
	case q.armed || q.s.life.ctx.Err() != nil:
	case q.timer == nil:
		q.timer = time.AfterFunc(foldWait, q.flush)
		q.armed = true
	default:
		q.timer.Reset(foldWait)
		q.armed = true
	}
}

// takenLocked marks d taken; when no delete is left for the flusher, the
// list is emptied and its timer stops. (The list must be emptied here: a
// loop on one lock has every delete taken by its path's next create, and
// the flusher, which empties it too, then never runs.) q.mu is held.
func (q *deleteQueue) takenLocked(d *pendingDelete) {
	d.sent = make(chan struct{})
	q.untaken--
	if q.untaken > 0 {
		return
	}
	q.order = emptied(q.order)
	if q.armed {
		q.timer.Stop()
		q.armed = false
	}
}

// emptied returns ds with no element, its array holding no pointer.
func emptied(ds []*pendingDelete) []*pendingDelete {
	clear(ds)
	return ds[:0]
}

// stop stops the flusher's timer (the session is closing: its nodes
// go with it).
func (q *deleteQueue) stop() {
	q.mu.Lock()
	if q.timer != nil {
		q.timer.Stop()
	}
	q.armed = false
	q.mu.Unlock()
}

// serial deletes d's node without folding: the entry is in flight at
// once, and stays until the delete is done, so that the next create on the
// path waits for it.
func (q *deleteQueue) serial(d *pendingDelete) {
	d.sent = make(chan struct{})
	q.mu.Lock()
	q.byPath[d.path] = d
	q.mu.Unlock()
	q.sendAlone(d)
}

// take returns, for a create on path, this path's pending delete,
// which it must carry in its multi, or a channel to wait on while it is
// being written.
func (q *deleteQueue) take(path string) (take *pendingDelete, inFlight <-chan struct{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if d := q.byPath[path]; d != nil {
		if d.sent != nil {
			return nil, d.sent
		}
		q.takenLocked(d)
		trace.DelTaken(q.s.conn, d.path, d.node)
		return d, nil
	}
	return nil, nil
}

// queued reports whether a delete of a node on path is pending, or taken
// and not yet on the wire.
func (q *deleteQueue) queued(path string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.byPath[path] != nil
}

// takeOther returns the oldest pending delete, of any path, for a create
// about to be sent (admitted already, so that the delete is not held up
// by the bound): one log write on the server instead of two.
func (q *deleteQueue) takeOther() *pendingDelete {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.order) > 0 {
		d := q.order[0]
		q.order[0] = nil
		q.order = q.order[1:]
		if d.sent == nil {
			q.takenLocked(d)
			trace.DelTaken(q.s.conn, d.path, d.node)
			return d
		}
	}
	return nil
}

// sent marks d on the wire (or over): a create on its path may go.
func (q *deleteQueue) sent(d *pendingDelete) {
	q.mu.Lock()
	if q.byPath[d.path] == d {
		delete(q.byPath, d.path)
	}
	q.mu.Unlock()
	close(d.sent)
}

// sendAlone sends taken d on its own, guaranteed, and marks it on the wire
// only once it is over, so that no create on its path goes out first (the
// session would have two nodes queued on the path meanwhile).
func (q *deleteQueue) sendAlone(d *pendingDelete) {
	q.s.goBackground(func() {
		q.s.deleteGuaranteed(d.node, d.owner)
		q.sent(d)
	})
}

// flush is the session's flusher, run by its timer foldWait after a
// release, so that an acquisition about to run (the releasing goroutine's
// next one, typically) can take the delete into its create first: it
// sends every delete still waiting, several in one multi. (Yielding once
// instead of waiting was not enough: with a processor idle, the flusher
// ran at once beside the releasing goroutine and sent the delete before
// that goroutine's next create could take it.)
func (q *deleteQueue) flush() {
	q.s.life.bg.add()
	defer q.s.life.bg.done()
	if q.s.life.ctx.Err() != nil {
		return // closing: the session's nodes go with it
	}
	if gate := testFlushGate.Load(); gate != nil {
		select {
		case <-*gate:
		case <-q.s.life.ctx.Done():
			return
		}
	}
	var batch []*pendingDelete
	q.mu.Lock()
	q.armed = false
	for _, d := range q.order {
		if d.sent == nil {
			trace.DelFlushed(q.s.conn, d.path, d.node)
			d.sent = make(chan struct{})
			batch = append(batch, d)
		}
	}
	q.order = emptied(q.order)
	q.untaken = 0
	q.mu.Unlock()
	if len(batch) > 0 {
		q.send(batch)
	}
}

// foldWait is how long a released node's delete waits for a create of
// the session to carry it before the flusher sends it: short beside a
// hand-off between processes (a committed write, an event and a read),
// long beside the path from a release to the releasing goroutine's next
// create.
const foldWait = 100 * time.Microsecond

// testFlushGate, when a test sets it, holds every session's flusher until
// the channel closes, so that a test can see which create carries a
// pending delete.
var testFlushGate atomic.Pointer[chan struct{}]

// send sends batch (a delete, or a multi of them) and returns once
// it is on the wire; a failure falls back to a guaranteed delete each.
func (q *deleteQueue) send(batch []*pendingDelete) {
	req := func() error {
		var err error
		if len(batch) == 1 {
			trace.Sent(q.s.conn, trace.OpDelete, batch[0].node)
			err = q.s.conn.Delete(batch[0].node, -1)
			trace.Answered(q.s.conn, trace.OpDelete, batch[0].node, batch[0].node, err)
		} else {
			ops := make([]any, len(batch))
			for i, d := range batch {
				ops[i] = &zk.DeleteRequest{Path: d.node, Version: -1}
			}
			trace.DeletesSent(q.s.conn, ops)
			var res []zk.MultiResponse
			res, err = q.s.conn.Multi(ops...)
			trace.MultiAnswered(q.s.conn, batch[0].node, res, err)
		}
		if err != nil && !(len(batch) == 1 && errors.Is(err, zk.ErrNoNode)) {
			for _, d := range batch {
				q.s.deleteInBackground(d.node, d.owner)
			}
		}
		return err
	}
	op := wire.OpDelete
	if len(batch) > 1 {
		op = wire.OpMulti
	}
	// Exempt from the bound: a delete lets others in, and is never what
	// makes a backlog (there is one per hold).
	q.s.pipeline(q.s.life.ctx, batch[0].node, request{write: true, do: req}, op)
	for _, d := range batch {
		q.sent(d)
	}
}

// Guaranteed deletes (Curator's): retried whatever the error until the
// node is gone or its session is over.

// deleteGuaranteed deletes node, created by session owner, retrying
// whatever the error until the node is gone or its session is over
// (Curator's guaranteed delete). A session is over when the client holds
// another one (the server expired it, and its ephemeral nodes with it), or
// when the connection was closed (by the Session, which owns it, or under
// NewSession by its owner: go-zookeeper's Close ends the session at once).
// Once the Session is closed, it also stops after twice the session
// timeout without a session, so that Close under NewSession is bounded.
func (s *Session) deleteGuaranteed(node string, owner int64) {
	s.untilSessionOver(owner, func() (bool, error) {
		// Guarded: this closure is copied where deleteGuaranteed is
		// inlined, and the copies' calls are not inlined themselves.
		if trace.Enabled {
			trace.RetrySent(s.conn, node)
		}
		err := s.conn.Delete(node, -1)
		if trace.Enabled {
			trace.RetryAnswered(s.conn, node, err)
		}
		if refusal(err) && !errors.Is(err, zk.ErrNoNode) {
			s.log.Warn("lock node delete refused; retrying", "node", node, "err", err)
		}
		return err == nil || errors.Is(err, zk.ErrNoNode), err
	})
}

// untilSessionOver runs op, backing off between attempts, until it reports
// done or session owner is over (see deleteGuaranteed), whatever errors op
// meets. Closing the Session does not stop it unless the Session owns the
// connection; under NewSession, the owner's closing of the connection
// does.
func (s *Session) untilSessionOver(owner int64, op func() (done bool, err error)) {
	b := s.newBackOff()
	var downSince time.Time
	for {
		// While the connection is down the request would only be queued,
		// to go out first thing on the next connection (where go-zookeeper
		// races with its own re-arming of watches): wait instead.
		if s.conn.State() == zk.StateHasSession {
			if done, _ := op(); done {
				return
			}
		}
		if s.hardStopped() || s.link.connGone.Load() {
			// Our connection is closed (by us, or under NewSession by its
			// owner): go-zookeeper's Close ended the session, and the
			// server deletes its nodes.
			return
		}
		if id := s.conn.SessionID(); id != owner && owner != 0 {
			return
		}
		// No give-up by time while the Session is open: a session can
		// outlive any outage, since a server that takes over (a restart, a
		// new leader) gives every session a fresh timeout, and a node left
		// to a live session would block its queue for the session's life.
		// Only a closed Session (under NewSession: Close waits for this)
		// stops after 2T without a session.
		if s.conn.State() != zk.StateHasSession && s.isClosed() {
			if downSince.IsZero() {
				downSince = time.Now()
			} else if time.Since(downSince) > 2*s.timeout() {
				return
			}
		} else {
			downSince = time.Time{}
		}
		t := time.NewTimer(b.NextBackOff())
		select {
		case <-t.C:
		case <-s.life.hardStop:
			t.Stop()
			return
		}
	}
}

// deleteInBackground runs deleteGuaranteed on a goroutine the session
// tracks.
func (s *Session) deleteInBackground(node string, owner int64) {
	s.goBackground(func() { s.deleteGuaranteed(node, owner) })
}

func (s *Session) hardStopped() bool {
	select {
	case <-s.life.hardStop:
		return true
	default:
		return false
	}
}
