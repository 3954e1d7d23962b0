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

// The wait, whole: our node's turn in the queue, read and watched on the
// caller's goroutine (waitTurn and its waiter), and what it notes as it
// goes: the position reports (WithPositionHandler) and the lock's view of
// the queue (queueView, seen.go), which the WaitError of a wait that ends
// is made from (holder.go). The queue's order and the recipes' rules are
// node.go's.

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
	l.view.queued(n.node)
	w := &waiter{l: l, n: n, name: path.Base(n.node), pos: newPositions(l.onPosition, n.node, l.path, wait)}
	defer w.stop()
	for {
		if l.f.Conn().SessionID() != n.owner {
			return 0, false, errNodeGone // our node was ephemeral to a session that is over
		}
		if n.q == nil {
			if _, err := w.list(ctx, nil); err != nil {
				if err = w.failed(ctx, err); err != nil {
					return 0, false, err
				}
				continue
			}
		}
		i := n.at
		l.view.sawQueue(n.q, i, n.owner)
		if i < 0 {
			trace.Turned(l.f.Conn(), n.node, i, false, n.pzxid)
			return 0, false, errNodeGone
		}
		goes, watch := l.rule(n.q, i)
		trace.Turned(l.f.Conn(), n.node, i, goes, n.pzxid)
		if w.pos != nil { // a position handler
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

// list reads the queue and stores the listing; with fn, it sets a
// children watch with it (any child created or deleted fires it), told to
// fn (Floor.ListWatched). A listing without a watch goes with the
// session's other listings where it can (Floor.List).
func (w *waiter) list(ctx context.Context, fn func(zk.Event)) (session.Read, error) {
	f := w.l.f
	var r session.Read
	var err error
	if fn != nil {
		r, err = f.ListWatched(ctx, w.l.path, fn)
	} else if err = f.Flight().Admit(ctx, 1); err == nil {
		r.Children, r.Stat, err = f.List(ctx, w.l.path)
	}
	if err != nil {
		return r, err // the request may still run: what it writes is not read
	}
	w.n.q, w.n.at = queueOf(r.Children, w.name, w.l.parse)
	w.n.pzxid = r.Stat.Pzxid
	return r, nil
}

// arm sets the watch the rule asks for (node watch, the index of the
// node; or watchChildren), unless it stands. fresh reports that the queue
// must be looked at again before waiting: a children watch came with a
// listing, which it stored, or the node to watch was already gone.
func (w *waiter) arm(ctx context.Context, watch int) (fresh bool, err error) {
	target := childrenWatched
	if watch != watchChildren {
		target = w.l.path + "/" + w.n.q[watch].name
	}
	if target == w.watched {
		return false, nil
	}
	w.drop()
	// A fresh signal, so that a stale callback cannot wake a later wait,
	// set by the watch's callback (the floor registers it before the
	// request, so that no event after it is missed; on go-zookeeper's
	// event goroutine).
	w.signal = mutexbool.New(false)
	sig := w.signal
	set := func(zk.Event) { sig.Set(true) }
	var r session.Read
	if target == childrenWatched {
		r, err = w.list(ctx, set)
	} else {
		r, err = w.watchNode(ctx, target, set)
	}
	switch {
	case errors.Is(err, zk.ErrNoNode) && target != childrenWatched:
		w.drop()
		w.n.q = nil // it went away in between: look again at once
		return true, nil
	case err != nil:
		w.drop()
		return false, err
	}
	w.watched, w.unwatch, w.ev = target, r.Unwatch, r.Events
	return target == childrenWatched, nil
}

// watchNode reads the node at target with a data watch told to fn (an
// exists watch on a node that is already gone would stay behind), and
// notes it in the lock's view as the node ours watches. The floor chooses
// the read's way (Floor.Watch).
func (w *waiter) watchNode(ctx context.Context, target string, fn func(zk.Event)) (session.Read, error) {
	f := w.l.f
	if err := f.Flight().Admit(ctx, 1); err != nil {
		return session.Read{}, err
	}
	r, err := f.Watch(ctx, target, true, fn)
	if err != nil {
		return r, err // the request may still run: what it writes is not read
	}
	p := participantOf(path.Base(target), r.Data, r.Stat)
	w.l.view.sawWatched(p)
	return r, nil
}

// sleep waits for the watch, the re-check or the end of the wait.
func (w *waiter) sleep(ctx context.Context) error {
	f := w.l.f
	// The re-check, sooner when a stall is due to be judged (stalled.go).
	w.setTimer(w.stallRecheck())
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
	w.leftStall()
	if w.watched != "" && (w.signal.State() || len(w.ev) > 0) {
		w.l.view.unwatched() // it fired as the wait ended
	}
	w.forget()
	if w.timer != nil {
		w.timer.Stop()
	}
}

// leadAtOnce is the grant-before-listing bug (its other half is
// listBehind's): our node, created, is taken to lead without the listing's
// answer (the queue is our node alone: its sequence orders nothing). The
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
	n.q, n.at, n.pzxid = []entry{{name: path.Base(n.node)}}, 0, st.Czxid
}

// grantsEarly is the watch-grants-early bug: the predecessor's watch fired
// (sleep dropped it; a re-check keeps it), and the waiter goes on as
// leading without reading the queue again, with the token of the listing
// that found it waiting.
func (w *waiter) grantsEarly() bool {
	return mutant.On(mutant.WatchGrantsEarly) && w.watched == ""
}

// positions reports one queued node's place to the handler on the
// caller's goroutine, so reports come in order and never after Acquire
// returned; without a handler waitTurn makes no call.
type positions struct {
	fn   func(Position)
	node string
	dir  string // the lock path, for Holder
	last Position
	any  bool // last is set
}

// newPositions returns the reporter to fn of node, queued on the lock at
// dir; nil without a handler (fn nil), or a wait.
func newPositions(fn func(Position), node, dir string, wait bool) *positions {
	if fn == nil || !wait {
		return nil
	}
	return &positions{fn: fn, node: node, dir: dir}
}

// seen reports our node at index i of q, going or not, unless that is
// the position reported last (a re-check that finds nothing new).
func (p *positions) seen(q []entry, i int, goes bool) {
	pos := Position{Node: p.node, Ahead: i, Queued: len(q), Holder: p.dir + "/" + q[0].name, Leads: goes}
	if p.any && pos == p.last {
		return
	}
	p.last, p.any = pos, true
	p.fn(pos)
}

// What the wait notes in the lock's view as it goes (queueView, seen.go,
// says what it holds and who reads it).

// queued starts the view of node, about to be queued ("") or just
// queued: nothing seen of its place yet.
func (v *queueView) queued(node string) {
	v.mu.Lock()
	v.node, v.ahead, v.watched, v.standing = node, -1, nil, false
	v.mu.Unlock()
}

// sawQueue notes a listing, made in session, in which our node is at
// index i (-1: absent).
func (v *queueView) sawQueue(q []entry, i int, session int64) {
	v.mu.Lock()
	v.ahead = i
	if len(q) > 0 {
		v.sawHolderLocked(q[0].name, nil, session)
	}
	v.mu.Unlock()
}

// sawHolderLocked notes holder, first in a listing or read of session,
// with its node as read (nil: not read; an owner read before of the same
// node is kept).
func (v *queueView) sawHolderLocked(holder string, owner *Participant, session int64) {
	if holder != v.holder || session != v.seenIn {
		v.owner = nil
	}
	if owner != nil {
		v.owner = owner
	}
	v.holder, v.seenIn = holder, session
}

// sawWatched notes p, the node our node watches, as its GetW returned
// it: the watch stands from now on.
func (v *queueView) sawWatched(p *Participant) {
	v.mu.Lock()
	v.watched, v.standing = p, true
	if p.Node == v.holder {
		v.owner = p
	}
	v.mu.Unlock()
}

// unwatched notes that the watch fired or was dropped: the watched node
// may be gone.
func (v *queueView) unwatched() {
	v.mu.Lock()
	v.standing = false
	v.mu.Unlock()
}

// stallRecheck notes the wait's queue as it goes to sleep and returns how
// long it sleeps before it reads the queue again: the re-check interval,
// or less, so that it reads the queue again (and notes it here) once it
// has stood a third of the session timeout behind the same head, and
// every third of the timeout after that while it does.
func (w *waiter) stallRecheck() time.Duration {
	return w.l.s.stalls.waiting(w.l, w.n.q, w.name, w.n.owner, w.l.recheck)
}

// leftStall notes that the wait is over, with the queue as it last read
// it.
func (w *waiter) leftStall() { w.l.s.stalls.left(w.l, w.n.q) }
