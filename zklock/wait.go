package zklock

import (
	"context"
	"errors"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/mutexbool"
)

// waitTurn blocks until our node leads the queue. agapple's design: a
// watcher goroutine owns the watch on our predecessor; each time it fires
// (or the periodic re-check comes due) it re-reads the queue, and when our
// node leads, or the wait cannot go on, it sets the BooleanMutex that this
// call waits on. q is enqueue's listing (nil to list first). It returns the
// fencing token (see lead).
func (l *Lock) waitTurn(ctx context.Context, n queued, q []entry) (token int64, err error) {
	w := &waiter{l: l, node: n.node, owner: n.owner, name: path.Base(n.node), q: q, pzxid: n.pzxid,
		signal: mutexbool.New(false), stop: make(chan struct{})}
	w.pos = n.pos
	l.s.goBackground(w.run)
	if err := w.pos.await(ctx, w.signal); err != nil {
		close(w.stop)
		return 0, err
	}
	// The signal's Set happens after err and pzxid are written.
	return w.pzxid, w.err
}

type waiter struct {
	l      *Lock
	node   string
	owner  int64
	name   string
	q      []entry // first listing, from enqueue; nil to list
	signal *mutexbool.BooleanMutex
	err    error // written before signal is set
	pzxid  int64 // of the listing that found us first; written before signal
	stop   chan struct{}
	pos    *positions // told each position read; nil: none

	// The watch on our predecessor (or childrenWatched), kept across re-checks: go-zookeeper
	// keeps every GetW channel until its node changes, so setting a new
	// one on each re-check would pile channels up for as long as the
	// predecessor holds.
	watched string
	ev      <-chan zk.Event
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
			children, stat, err := s.conn.Children(w.l.path)
			if err != nil {
				if w.failed(err, pause) {
					continue
				}
				return
			}
			q = w.l.sortQueue(children)
			w.pzxid = stat.Pzxid
		}
		i := position(q, w.name, "")
		if i < 0 {
			w.finish(errNodeGone)
			return
		}
		goes, watch := w.l.rule(q, i)
		w.pos.seen(q, i, goes)
		if goes {
			w.finish(nil)
			return
		}
		if watch == watchChildren {
			// The rule needs to hear of any change to the queue (a
			// semaphore's lease count): a children watch, set once and
			// kept until it fires. Its listing is re-read at once, so no
			// change between the last listing and the watch is missed.
			if w.watched != childrenWatched {
				children, stat, ev, err := s.conn.ChildrenW(w.l.path)
				if err != nil {
					if w.failed(err, pause) {
						continue
					}
					return
				}
				w.watched, w.ev = childrenWatched, ev
				w.q, w.pzxid = w.l.sortQueue(children), stat.Pzxid
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
		case <-w.ev:
			// Fired (deleted, changed) or dropped with the session: either
			// way the channel is spent.
			w.watched, w.ev = "", nil
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
