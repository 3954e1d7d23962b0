package zklock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// Releases: a released node's delete waits for the session's next create,
// or for the flusher, and is guaranteed: retried until the node or its
// session is gone.

// deletes are the session's releases whose delete is not on the wire yet,
// so that a create of the session can carry one in its multi, and so that
// the session never has two nodes queued on one path: a create on a path
// waits until the path's delete is on the wire, and ZooKeeper applies a
// session's requests in the order they arrive.
type deletes struct {
	mu      sync.Mutex
	byPath  map[string]*pendingDelete // by lock path: one at most, see above
	order   []*pendingDelete          // those not taken yet, oldest first (taken ones are skipped)
	untaken int                       // in order and not taken
	// flush sends, foldWait after a release, the deletes no create took;
	// stopped (no goroutine woken) when creates took them all first.
	flush *time.Timer
	armed bool // flush is set to fire
}

// pendingDelete is a released node not yet deleted: waiting (sent == nil)
// or taken, by a create's multi or the flusher (sent closes once it is on
// the wire, or over).
type pendingDelete struct {
	path, node string
	owner      int64 // the session that created node
	sent       chan struct{}
}

func (s *Session) initDeletes() {
	s.dels.byPath = make(map[string]*pendingDelete)
}

// queueDelete schedules the delete of node, released or abandoned on the
// lock at path. It does not wait: the delete goes with the session's next
// create, or with the flusher foldWait later. Either way it is
// guaranteed: retried, whatever the error, until the node is gone or its
// session is over.
func (s *Session) queueDelete(path, node string, owner int64) {
	d := &pendingDelete{path: path, node: node, owner: owner}
	if s.cfg.noPipelining || s.tap == nil {
		s.deleteSerial(d)
		return
	}
	s.dels.mu.Lock()
	defer s.dels.mu.Unlock()
	if old := s.dels.byPath[path]; old != nil && old.sent == nil {
		// Two Locks of the session on one path, both releasing before
		// either delete went out: the older one goes on its own, taken
		// here so that the flusher does not send it a second time.
		s.takenLocked(old)
		s.sendAlone(old)
	}
	s.dels.byPath[path] = d
	s.dels.order = append(s.dels.order, d)
	s.dels.untaken++
	switch {
	case s.dels.armed || s.ctx.Err() != nil:
	case s.dels.flush == nil:
		s.dels.flush = time.AfterFunc(foldWait, s.flushDeletes)
		s.dels.armed = true
	default:
		s.dels.flush.Reset(foldWait)
		s.dels.armed = true
	}
}

// takenLocked marks d taken; when no delete is left for the flusher, the
// list is emptied and its timer stops. (The list must be emptied here: a
// loop on one lock has every delete taken by its path's next create, and
// the flusher, which empties it too, then never runs.) s.dels.mu is held.
func (s *Session) takenLocked(d *pendingDelete) {
	d.sent = make(chan struct{})
	s.dels.untaken--
	if s.dels.untaken > 0 {
		return
	}
	s.dels.order = emptied(s.dels.order)
	if s.dels.armed {
		s.dels.flush.Stop()
		s.dels.armed = false
	}
}

// emptied returns ds with no element, its array holding no pointer.
func emptied(ds []*pendingDelete) []*pendingDelete {
	clear(ds)
	return ds[:0]
}

// stopFlush stops the flusher's timer (the session is closing: its nodes
// go with it).
func (s *Session) stopFlush() {
	s.dels.mu.Lock()
	if s.dels.flush != nil {
		s.dels.flush.Stop()
	}
	s.dels.armed = false
	s.dels.mu.Unlock()
}

// deleteSerial deletes d's node without folding: the entry is in flight at
// once, and stays until the delete is done, so that the next create on the
// path waits for it.
func (s *Session) deleteSerial(d *pendingDelete) {
	d.sent = make(chan struct{})
	s.dels.mu.Lock()
	s.dels.byPath[d.path] = d
	s.dels.mu.Unlock()
	s.sendAlone(d)
}

// takeDelete returns, for a create on path, this path's pending delete,
// which it must carry in its multi, or a channel to wait on while it is
// being written.
func (s *Session) takeDelete(path string) (take *pendingDelete, inFlight <-chan struct{}) {
	s.dels.mu.Lock()
	defer s.dels.mu.Unlock()
	if d := s.dels.byPath[path]; d != nil {
		if d.sent != nil {
			return nil, d.sent
		}
		s.takenLocked(d)
		return d, nil
	}
	return nil, nil
}

// takeOther returns the oldest pending delete, of any path, for a create
// about to be sent (admitted already, so that the delete is not held up
// by the bound): one log write on the server instead of two.
func (s *Session) takeOther() *pendingDelete {
	s.dels.mu.Lock()
	defer s.dels.mu.Unlock()
	for len(s.dels.order) > 0 {
		d := s.dels.order[0]
		s.dels.order[0] = nil
		s.dels.order = s.dels.order[1:]
		if d.sent == nil {
			s.takenLocked(d)
			return d
		}
	}
	return nil
}

// deleteSent marks d on the wire (or over): a create on its path may go.
func (s *Session) deleteSent(d *pendingDelete) {
	s.dels.mu.Lock()
	if s.dels.byPath[d.path] == d {
		delete(s.dels.byPath, d.path)
	}
	s.dels.mu.Unlock()
	close(d.sent)
}

// sendAlone sends taken d on its own, guaranteed, and marks it on the wire
// only once it is over, so that no create on its path goes out first (the
// session would have two nodes queued on the path meanwhile).
func (s *Session) sendAlone(d *pendingDelete) {
	s.goBackground(func() {
		s.deleteGuaranteed(d.node, d.owner)
		s.deleteSent(d)
	})
}

// flushDeletes is the session's flusher, run by its timer foldWait after a
// release, so that an acquisition about to run (the releasing goroutine's
// next one, typically) can take the delete into its create first: it
// sends every delete still waiting, several in one multi. (Yielding once
// instead of waiting was not enough: with a processor idle, the flusher
// ran at once beside the releasing goroutine and sent the delete before
// that goroutine's next create could take it.)
func (s *Session) flushDeletes() {
	s.bg.add()
	defer s.bg.done()
	if s.ctx.Err() != nil {
		return // closing: the session's nodes go with it
	}
	if gate := testFlushGate.Load(); gate != nil {
		select {
		case <-*gate:
		case <-s.ctx.Done():
			return
		}
	}
	var batch []*pendingDelete
	s.dels.mu.Lock()
	s.dels.armed = false
	for _, d := range s.dels.order {
		if d.sent == nil {
			d.sent = make(chan struct{})
			batch = append(batch, d)
		}
	}
	s.dels.order = emptied(s.dels.order)
	s.dels.untaken = 0
	s.dels.mu.Unlock()
	if len(batch) > 0 {
		s.sendDeletes(batch)
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

// sendDeletes sends batch (a delete, or a multi of them) and returns once
// it is on the wire; a failure falls back to a guaranteed delete each.
func (s *Session) sendDeletes(batch []*pendingDelete) {
	req := func() error {
		var err error
		if len(batch) == 1 {
			err = s.conn.Delete(batch[0].node, -1)
		} else {
			ops := make([]any, len(batch))
			for i, d := range batch {
				ops[i] = &zk.DeleteRequest{Path: d.node, Version: -1}
			}
			_, err = s.conn.Multi(ops...)
		}
		if err != nil && !(len(batch) == 1 && errors.Is(err, zk.ErrNoNode)) {
			for _, d := range batch {
				s.deleteInBackground(d.node, d.owner)
			}
		}
		return err
	}
	op := opDelete
	if len(batch) > 1 {
		op = opMulti
	}
	// Exempt from the bound: a delete lets others in, and is never what
	// makes a backlog (there is one per hold).
	s.pipelined(s.ctx, batch[0].node, false, true, req, op)
	for _, d := range batch {
		s.deleteSent(d)
	}
}

// takeDelete returns the pending delete of the session that our create
// carries, after waiting until this path's delete is on the wire (see
// Session.takeDelete). TryAcquire does not wait through a disconnection:
// the lock counts as taken (by our own old node) until the delete can be
// sent.
func (l *Lock) takeDelete(ctx context.Context, wait bool) (*pendingDelete, error) {
	s := l.s
	for {
		d, inFlight := s.takeDelete(l.path)
		if inFlight == nil {
			return d, nil
		}
		changed := s.stateChanged()
		if !wait && s.State() != StateConnected {
			select {
			case <-inFlight:
				continue
			default:
				return nil, errBusyDelete
			}
		}
		select { // microseconds while connected: the delete is being written
		case <-inFlight:
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

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
		err := s.conn.Delete(node, -1)
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
		if s.hardStopped() || s.connGone.Load() {
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
		case <-s.hardStop:
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
