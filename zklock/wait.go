package zklock

import (
	"context"
	"errors"
	"path"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/mutant"
	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/mutexbool"
	"github.com/tierlock/tierlock/zklock/internal/session"
)

// The wait (waitTurn), and the queue's order it reads (sortQueue).

// waitTurn blocks until our node leads the queue (or, when !wait, looks
// once), on the caller's goroutine: agapple's design, with no goroutine of
// its own. Our predecessor's watch is a callback of the session's (state.go)
// that sets a BooleanMutex; this waits on it, beside a re-check timer (a
// watch can be lost when a server restarts) and ctx, then reads the queue
// again. Under NewSession there is no event callback, and it waits on the
// watch's own channel instead. It returns the fencing token: the pzxid of
// the listing that found our node leading, the zxid of the last change to
// the queue, which is at least our node's creation zxid and, since a
// successor can only lead on a listing taken after our node's deletion,
// strictly below every later holder's token (multis: docs/guarantees.md).
func (l *Lock) waitTurn(ctx context.Context, n *ourNode, wait bool) (token int64, leads bool, err error) {
	w := &waiter{l: l, n: n, name: path.Base(n.node), pos: newPositions(l.onPosition, n.node, l.path, wait)}
	defer w.stop()
	for {
		if l.f.Conn().SessionID() != n.owner {
			return 0, false, errNodeGone // our node was ephemeral to a session that is over
		}
		if n.q == nil {
			if err := w.list(ctx); err != nil {
				if err = w.failed(ctx, err); err != nil {
					return 0, false, err
				}
				continue
			}
		}
		i := position(n.q, w.name, "")
		l.view.sawQueue(n.q, i, n.owner)
		if i < 0 {
			trace.Turned(l.f.Conn(), n.node, i, false, n.pzxid)
			return 0, false, errNodeGone
		}
		goes, watch := l.rule(n.q, i)
		trace.Turned(l.f.Conn(), n.node, i, goes, n.pzxid)
		if w.pos != nil { // a position handler (position.go)
			w.pos.seen(n.q, i, goes)
		}
		if goes || !wait {
			return n.pzxid, goes, nil
		}
		fresh, err := w.arm(ctx, watch)
		if err != nil {
			if err = w.failed(ctx, err); err != nil {
				return 0, false, err
			}
			n.q = nil // read the queue again, as twotier.pml's wait does after a failed watch
			continue
		}
		if fresh {
			continue // the watch came with a listing: look at it first
		}
		if err := w.sleep(ctx); err != nil {
			return 0, false, err
		}
		if w.grantsEarly() {
			return n.pzxid, true, nil // seeded bug: the queue not read again
		}
		n.q = nil
	}
}

// waiter is waitTurn's state: the watch it keeps on the node (or queue)
// whose change can let it go, kept across re-checks while that stays the
// same (go-zookeeper keeps every GetW channel until its node changes, so
// setting a new one on each re-check would pile channels up for as long as
// the predecessor holds), and the re-check timer.
type waiter struct {
	l       *Lock
	n       *ourNode
	name    string
	pos     *positions
	watched string                  // the watched path (childrenWatched for the queue); "" when none
	signal  *mutexbool.BooleanMutex // set by the watch's callback
	ev      <-chan zk.Event         // the watch's own channel, under NewSession only
	unwatch func()
	timer   *time.Timer
	pauses  *backoff.ExponentialBackOff
}

// childrenWatched marks a children watch on the lock path in
// waiter.watched (no node name starts with a space).
const childrenWatched = " children"

// list reads the queue.
func (w *waiter) list(ctx context.Context) error {
	f := w.l.f
	var children []string
	var stat *zk.Stat
	err := f.Flight().Send(ctx, func() error {
		trace.Sent(f.Conn(), trace.OpList, w.l.path)
		c, st, err := f.Conn().Children(w.l.path)
		trace.Listed(f.Conn(), trace.OpList, w.l.path, c, st, err)
		if err == nil {
			children, stat = c, st
		}
		return err
	})
	if err == nil {
		w.n.q, w.n.pzxid = w.l.sortQueue(children), stat.Pzxid
	}
	return err
}

// arm sets the watch the rule asks for (node watch, the index of the
// node; or watchChildren), unless it stands. fresh reports that the queue
// must be looked at again before waiting: a children watch came with a
// listing, which it stored, or the node to watch was already gone.
func (w *waiter) arm(ctx context.Context, watch int) (fresh bool, err error) {
	f := w.l.f
	target := childrenWatched
	if watch != watchChildren {
		target = w.l.path + "/" + w.n.q[watch].name
	}
	if target == w.watched {
		return false, nil
	}
	w.drop()
	w.signal = mutexbool.New(false)
	if f.Watches().Dispatching() {
		// Registered before the request, so that no event after it is
		// missed. The callback runs on go-zookeeper's event goroutine.
		wp, sig := target, w.signal
		if target == childrenWatched {
			wp = w.l.path
		}
		w.unwatch = f.Watches().Add(wp, func(zk.Event) { sig.Set(true) })
	}
	var ev <-chan zk.Event
	var children []string
	var data []byte
	var stat *zk.Stat
	err = f.Flight().Send(ctx, func() error {
		if target == childrenWatched {
			trace.Sent(f.Conn(), trace.OpChildrenW, w.l.path)
			c, st, ch, err := f.Conn().ChildrenW(w.l.path)
			trace.Listed(f.Conn(), trace.OpChildrenW, w.l.path, c, st, err)
			if err == nil {
				children, stat, ev = c, st, ch
			}
			return err
		}
		// A data watch: an exists watch on a node that is already gone
		// would stay behind.
		trace.Sent(f.Conn(), trace.OpGetW, target)
		d, st, ch, err := f.Conn().GetW(target)
		trace.Watched(f.Conn(), target, st, err)
		if err == nil {
			data, stat, ev = d, st, ch
		}
		return err
	})
	if err == nil && target == childrenWatched {
		w.n.q, w.n.pzxid = w.l.sortQueue(children), stat.Pzxid
	}
	if errors.Is(err, zk.ErrNoNode) && target != childrenWatched {
		w.drop()
		w.n.q = nil // it went away in between: look again at once
		return true, nil
	}
	if err != nil {
		w.drop()
		return false, err
	}
	w.watched = target
	if target != childrenWatched {
		w.l.view.sawWatched(target, data, stat)
	}
	if !f.Watches().Dispatching() {
		w.ev = ev
	}
	return target == childrenWatched, nil
}

// sleep waits for the watch, the re-check or the end of the wait.
func (w *waiter) sleep(ctx context.Context) error {
	f := w.l.f
	w.setTimer(w.l.recheck)
	w.pauses = nil // a wait that got this far has recovered
	select {
	case <-w.signal.Done():
		w.drop() // fired (deleted, changed) or dropped with the session
	case <-w.ev:
		w.drop()
	case <-w.timer.C:
		// A watch can be lost when a server restarts: re-read the queue,
		// keeping the watch while the predecessor stays the same.
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-f.Done():
		return f.ClosedErr()
	}
	w.timer.Stop()
	return nil
}

// failed handles the error of a request on the queue: the lock path gone
// ends the wait (our node went with it), a refusal or the end of ctx ends
// it with the error, and anything else (the request's fate unknown) is
// retried after a pause.
func (w *waiter) failed(ctx context.Context, err error) error {
	f := w.l.f
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return errNodeGone
	case session.Refusal(err) || ctx.Err() != nil:
		return err
	}
	if w.pauses == nil {
		w.pauses = f.NewBackOff()
	}
	w.setTimer(w.pauses.NextBackOff())
	select {
	case <-w.timer.C:
	case <-ctx.Done():
		w.timer.Stop()
		return ctx.Err()
	}
	if f.Closed() {
		return f.ClosedErr()
	}
	return nil
}

// setTimer sets the waiter's one timer (the re-check, or a pause after a
// failed request) to fire after d. Since Go 1.23 a Reset timer delivers no
// value from before the Reset.
func (w *waiter) setTimer(d time.Duration) {
	if w.timer == nil {
		w.timer = time.NewTimer(d)
		return
	}
	w.timer.Reset(d)
}

// drop forgets the watch, which fired or is given up: the lock's view no
// longer knows the watched node to stand.
func (w *waiter) drop() {
	w.forget()
	w.l.view.unwatched()
}

// forget removes the watch's callback and channel.
func (w *waiter) forget() {
	if w.unwatch != nil {
		w.unwatch()
		w.unwatch = nil
	}
	w.watched, w.ev = "", nil
}

// stop ends the wait. The view keeps the watch as standing: it had not
// fired, and the error of a wait that ends is made from the view right
// after (acquire); acquire's end then marks the view over.
func (w *waiter) stop() {
	if w.watched != "" && (w.signal.State() || len(w.ev) > 0) {
		w.l.view.unwatched() // it fired as the wait ended
	}
	w.forget()
	if w.timer != nil {
		w.timer.Stop()
	}
}

// grantsEarly is the watch-grants-early bug: the predecessor's watch fired
// (sleep dropped it; a re-check keeps it), and the waiter goes on as
// leading without reading the queue again, with the token of the listing
// that found it waiting.
func (w *waiter) grantsEarly() bool {
	return mutant.On(mutant.WatchGrantsEarly) && w.watched == ""
}

// leadAtOnce is the grant-before-listing bug: our node, created, is taken
// to lead without the listing's answer (the queue is our node alone). The
// token is the node's creation zxid, read by an exists, so that tokens
// still grow and what the checks meet is the overlap itself.
func (l *Lock) leadAtOnce(n *ourNode) {
	if n.node == "" || n.q != nil {
		return
	}
	_, st, err := l.f.Conn().Exists(n.node)
	if err != nil || st == nil {
		return // n.q stays nil: waitTurn lists
	}
	n.q, n.pzxid = l.sortQueue([]string{path.Base(n.node)}), st.Czxid
}
