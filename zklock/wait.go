package zklock

import (
	"context"
	"errors"
	"path"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/mutexbool"
)

// waitTurn blocks until our node leads the queue. agapple's design: a
// watcher goroutine owns the watch on our predecessor; each time it fires
// (or the periodic re-check comes due) it re-reads the queue, and when our
// node leads, or the wait cannot go on, it sets the BooleanMutex that this
// call waits on. q is enqueue's listing (nil to list first). It returns the
// data watch the waiter set on our own node, answered, for the hold to keep
// (nil if it has none): it carries the fencing token (see lead).
func (l *Lock) waitTurn(ctx context.Context, n queued, q []entry) (*ownWatch, error) {
	w := &waiter{l: l, node: n.node, owner: n.owner, name: path.Base(n.node), q: q,
		signal: mutexbool.New(false), stop: make(chan struct{})}
	l.s.goBackground(w.run)
	if err := w.signal.Get(ctx); err != nil {
		close(w.stop)
		return nil, err
	}
	// The signal's Set happens after err and own are written.
	if w.err != nil {
		return nil, w.err
	}
	return w.own, nil
}

// ownWatch is a data watch on our own node, answered: the answer's czxid
// is the fencing token, and the watch, handed to the hold, tells of the
// node's deletion. The waiter sets it right after the create's reply, so
// neither the token's read nor the holder's watch lies on the hand-off
// chain (the predecessor's delete, its watch event, our grant).
type ownWatch struct {
	czxid int64
	ev    <-chan zk.Event
}

type waiter struct {
	l      *Lock
	node   string
	owner  int64
	name   string
	q      []entry // first listing, from enqueue; nil to list
	signal *mutexbool.BooleanMutex
	err    error     // written before signal is set
	own    *ownWatch // written before signal is set
	stop   chan struct{}

	// The watch on our predecessor (or childrenWatched), kept across re-checks: go-zookeeper
	// keeps every GetW channel until its node changes, so setting a new
	// one on each re-check would pile channels up for as long as the
	// predecessor holds.
	watched string
	ev      <-chan zk.Event
	// onlyAhead: in the last listing, the watched predecessor was the one
	// node ahead of ours (see shortcut).
	onlyAhead bool
}

// childrenWatched marks a children watch on the lock path in waiter.watched
// (no node name starts with a space).
const childrenWatched = " children"

// failed handles the error of a request on the queue: the lock path gone
// ends the wait (our node went with it), a refusal ends it with the error,
// and anything else (the request's fate unknown) is retried after a pause.
// It reports whether to go round again.
func (w *waiter) failed(err error, pause func() bool) bool {
	switch {
	case errors.Is(err, zk.ErrNoNode):
		w.finish(errNodeGone)
		return false
	case refusal(err):
		w.finish(err)
		return false
	}
	return pause()
}

func (w *waiter) finish(err error) {
	w.err = err
	w.signal.Set(true)
}

func (w *waiter) run() {
	s := w.l.s
	b := s.newBackOff()
	pause := func() bool {
		t := time.NewTimer(b.NextBackOff())
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-w.stop:
		case <-s.ctx.Done():
			w.finish(ErrSessionClosed)
		}
		return false
	}
	for {
		if s.conn.SessionID() != w.owner {
			// Our node was ephemeral to a session that is over.
			w.finish(errNodeGone)
			return
		}
		q := w.q
		w.q = nil
		if q == nil {
			children, _, err := s.conn.Children(w.l.path)
			if err != nil {
				if w.failed(err, pause) {
					continue
				}
				return
			}
			q = w.l.sortQueue(children)
		}
		i := position(q, w.name, "")
		if i < 0 {
			w.finish(errNodeGone)
			return
		}
		goes, watch := w.l.rule(q, i)
		if goes {
			w.finish(nil)
			return
		}
		w.onlyAhead = i == 1 && watch == 0
		if w.own == nil {
			// Our own node's data watch, before the predecessor's: the
			// shortcut relies on its being armed first.
			_, stat, ev, err := s.conn.GetW(w.node)
			switch {
			case errors.Is(err, zk.ErrNoNode):
				w.finish(errNodeGone)
				return
			case err != nil:
				if w.failed(err, pause) {
					continue
				}
				return
			case stat.EphemeralOwner != w.owner:
				w.finish(errNodeGone) // made by an older session: it goes with it
				return
			}
			w.own = &ownWatch{czxid: stat.Czxid, ev: ev}
		}
		if watch == watchChildren {
			// The rule needs to hear of any change to the queue (a
			// semaphore's lease count): a children watch, set once and
			// kept until it fires. Its listing is re-read at once, so no
			// change between the last listing and the watch is missed.
			if w.watched != childrenWatched {
				children, _, ev, err := s.conn.ChildrenW(w.l.path)
				if err != nil {
					if w.failed(err, pause) {
						continue
					}
					return
				}
				w.watched, w.ev = childrenWatched, ev
				w.q = w.l.sortQueue(children)
				continue
			}
		} else if pred := w.l.path + "/" + q[watch].name; pred != w.watched {
			// Watch only our predecessor, with a data watch: an exists
			// watch on a node that is already gone would stay behind.
			_, _, ev, err := s.conn.GetW(pred)
			if errors.Is(err, zk.ErrNoNode) {
				continue // it went away in between: look again at once
			}
			if err != nil {
				if w.failed(err, pause) {
					continue
				}
				return
			}
			w.watched, w.ev = pred, ev
		}
		b.Reset()
		var ownEv <-chan zk.Event
		if w.own != nil {
			ownEv = w.own.ev
		}
		t := time.NewTimer(w.l.recheck)
		select {
		case e := <-w.ev:
			// Fired (deleted, changed) or dropped with the session: either
			// way the channel is spent.
			w.watched, w.ev = "", nil
			if w.shortcut(e) {
				t.Stop()
				w.finish(nil)
				return
			}
		case <-ownEv:
			// Our node changed: deleted, or dropped with the session (the
			// listing will tell), or its data written (a revocation
			// request, say): set the watch again either way.
			w.own = nil
		case <-t.C:
			// A watch can be lost when a server restarts: re-read the queue,
			// keeping the watch while the predecessor stays the same.
		case <-w.stop:
			t.Stop()
			return
		case <-s.ctx.Done():
			t.Stop()
			w.finish(ErrSessionClosed)
			return
		}
		t.Stop()
	}
}

// shortcut reports whether the event e on the watched predecessor lets our
// node lead without listing the queue again, which takes a read off the
// hand-off chain. It does when
//   - e is the predecessor's deletion (not a data change, not the end of
//     the watch with the session),
//   - the predecessor was the one node ahead of ours in the last listing,
//   - our own node's watch was answered (our node existed, ours) and has
//     not fired, and the session is the one that made our node.
//
// Why that is enough: sequence numbers only grow, so a node created after
// the listing sorts behind ours, and every node that could sort ahead was
// in the listing; the one that was is gone. Our node still existed when the
// predecessor was deleted: its deletion, or the session's end, would have
// fired our own watch, and go-zookeeper delivers one session's watch events
// in zxid order, each to its channel before it reads further (recvLoop), so
// that event would be in w.own.ev before e was in w.ev; the non-blocking
// receive below, after our receive of e, would see it. The grant still
// waits for a valid lease (install). model/twotier.pml checks the shortcut.
func (w *waiter) shortcut(e zk.Event) bool {
	if e.Type != zk.EventNodeDeleted || !w.onlyAhead || w.own == nil || testNoShortcut {
		return false
	}
	select {
	case <-w.own.ev:
		w.own = nil // fired: list again, which finds out what happened
		return false
	default:
	}
	if w.l.s.conn.SessionID() != w.owner {
		return false
	}
	shortcuts.Add(1)
	return true
}

// Test seams: testNoShortcut turns the shortcut off (set only by tests,
// before any lock is used); shortcuts counts the grants it made.
var (
	testNoShortcut bool
	shortcuts      atomic.Int64
)
