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
// call waits on. q is enqueue's listing (nil to list first). It returns
// the hold's fencing token when it is known by then (see lead), else 0.
func (l *Lock) waitTurn(ctx context.Context, n queued, q []entry) (token int64, err error) {
	w := &waiter{l: l, node: n.node, owner: n.owner, name: path.Base(n.node), q: q,
		signal: mutexbool.New(false), stop: make(chan struct{})}
	w.pos = n.pos
	l.s.goBackground(w.run)
	if err := w.pos.await(ctx, w.signal); err != nil {
		close(w.stop)
		return 0, err
	}
	// The signal's Set happens after err and token are written.
	return w.token, w.err
}

type waiter struct {
	l      *Lock
	node   string
	owner  int64
	name   string
	q      []entry // first listing, from enqueue; nil to list
	signal *mutexbool.BooleanMutex
	err    error // written before signal is set
	token  int64 // written before signal is set
	stop   chan struct{}
	pos    *positions // told each position read; nil: none

	// czxid is our node's creation zxid, read (without a watch: a waiting
	// process keeps one watch, on its predecessor) while we wait, so that
	// the token is known at the grant; 0 until then.
	czxid int64

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
		q, token := w.q, int64(0)
		w.q = nil
		if q == nil {
			children, stat, err := s.conn.Children(w.l.path)
			if err != nil {
				if w.failed(err, pause) {
					continue
				}
				return
			}
			q = w.l.sortQueue(children)
			token = aloneToken(q, stat)
		}
		i := position(q, w.name, "")
		if i < 0 {
			w.finish(errNodeGone)
			return
		}
		goes, watch := w.l.rule(q, i)
		w.pos.seen(q, i, goes)
		if goes {
			if token == 0 {
				token = w.czxid // 0 if not read yet: the holder's watch reads it
			}
			w.token = token
			w.finish(nil)
			return
		}
		w.onlyAhead = i == 1 && watch == 0
		if w.czxid == 0 {
			_, stat, err := s.conn.Get(w.node)
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
			w.czxid = stat.Czxid
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
		t := time.NewTimer(w.l.recheck)
		select {
		case e := <-w.ev:
			// Fired (deleted, changed) or dropped with the session: either
			// way the channel is spent.
			w.watched, w.ev = "", nil
			if w.shortcut(e) {
				t.Stop()
				w.token = w.czxid
				w.pos.seenLead()
				w.finish(nil)
				return
			}
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
// hand-off chain (the holder's delete, its watch event, our grant). It
// does when e is the predecessor's deletion (not a data change such as a
// revocation request, not the end of the watch with the session), the
// predecessor was the one node ahead of ours in the last listing, the
// session is still the one that made our node, and our node's czxid (the
// token) has been read.
//
// Why that is enough: sequence numbers only grow, so a node created after
// the listing sorts behind ours, and every node that could sort ahead of
// ours was in the listing; the one that was is gone. Our node is still
// there: it is ephemeral to a session that is not over (an expiry ends
// every watch with EventNotWatching, never a deletion event, and leaves the
// client with another session id), and this session deletes it only after
// the wait ends. A third party deleting our waiting node by hand is the
// exception: then the grant is made on a node that is gone, and the hold's
// own-node watch reports ErrNodeDeleted one round trip later
// (TestShortcutAfterOwnNodeDeletedByHand); a node deleted by hand under a
// holder lets its successor in just as fast, so deleting lock nodes by hand
// is outside the guarantee either way. The grant still waits for a valid
// lease (install). model/twotier.pml checks the shortcut.
func (w *waiter) shortcut(e zk.Event) bool {
	if e.Type != zk.EventNodeDeleted || !w.onlyAhead || w.czxid == 0 || testNoShortcut {
		return false
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

// aloneToken returns the fencing token a listing gives when it finds our
// node alone in the queue: the listing's pzxid (see lead); 0 otherwise.
func aloneToken(q []entry, stat *zk.Stat) int64 {
	if len(q) != 1 || stat == nil {
		return 0
	}
	return stat.Pzxid
}
