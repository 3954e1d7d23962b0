package zklock

import (
	"context"
	"errors"
	"path"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/mutexbool"
)

// errParentsMade asks retry to create our node again once the missing
// parents exist.
var errParentsMade = errors.New("zklock: lock path created")

// errNodeGone reports that our queued node disappeared before we held the
// lock.
var errNodeGone = errors.New("zklock: lock node vanished while queued")

// errBusyDelete makes TryAcquire report false: our previous node is still
// queued.
var errBusyDelete = errors.New("zklock: previous node not yet deleted")

// queued is our node in the queue, as enqueue leaves it.
type queued struct {
	node  string  // full path
	owner int64   // the session that created it
	q     []entry // the pipelined listing, sorted; nil when it failed or missed our node
	pzxid int64   // the listing's pzxid
}

// attempt queues one node and waits for it to lead (or not, when !wait),
// then has the session grant the hold. It returns the hold, nil when !wait
// and the lock is taken, or an error; on an error no node of ours stays
// queued.
func (l *Lock) attempt(ctx context.Context, wait bool) (*Hold, error) {
	s := l.s
	s.queued(1)
	defer s.queued(-1)
	n, err := l.enqueue(ctx, wait)
	if errors.Is(err, errBusyDelete) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	token, leads, err := l.waitTurn(ctx, &n, wait)
	if err == nil && leads {
		h := l.newHold(n.node, n.owner, token)
		if err = s.grant(ctx, h); err == nil {
			return h, l.publish(h)
		}
	}
	// Even a node found gone is deleted: should the finding be wrong, a
	// node left behind would block the queue for the session's life (the
	// delete ends at once if it is gone or its session is over).
	s.queueDelete(l.path, n.node, n.owner)
	return nil, err
}

// enqueue creates our node and lists the queue, pipelined: the listing is
// sent right behind the create on the same session, so it sees our node
// and the whole exchange costs one round trip. A pending delete of the
// session goes in the same multi transaction as the create (see
// createAndList for which, and when it is taken). A create whose
// outcome is unknown (any error that is not the server's answer) may have
// been applied: before creating another, enqueueAgain looks for our GUID
// (protection mode), so no orphan blocks the queue.
func (l *Lock) enqueue(ctx context.Context, wait bool) (queued, error) {
	s := l.s
	// Credentials first (WithDigestAuth): a create under an ACL that
	// only they satisfy would be refused, or made anonymous.
	if err := s.awaitAuth(ctx); err != nil {
		return queued{}, err
	}
	guid := newGUID()
	prefix := l.path + "/" + protectedPrefix + guid + l.marker
	n, err := l.createAndList(ctx, prefix, wait)
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, errBusyDelete):
		return queued{}, err // nothing was sent
	case ctx.Err() == nil:
		return l.enqueueAgain(ctx, guid, prefix, err)
	case !refusal(err) && !errors.Is(err, ctx.Err()):
		// The create failed, its outcome unknown, as ctx ended (when ctx
		// ended first, abandon sweeps): the node may be there.
		l.sweepInBackground(guid)
		return queued{}, ctx.Err()
	}
	return queued{}, err
}

// createAndList is one create of our node with the listing pipelined
// behind it, the two admitted together by the bound on requests in flight.
// Only once admitted does the create take a pending delete to carry: this
// path's own (a released node of ours on the path, which it must carry or
// wait to see written), or else another path's. Taken before admission, a
// delete would wait behind the session's whole backlog, its node first in
// its queue all the while, where the flusher, exempt from the bound, sends
// it within foldWait (model/deletes.pml, MUTANT_TAKE_BEFORE_ADMISSION).
func (l *Lock) createAndList(ctx context.Context, prefix string, wait bool) (queued, error) {
	s := l.s
	if err := s.flight.acquire(ctx, 2, s.ctx.Done()); err != nil {
		return queued{}, err
	}
	stale, err := l.takeDelete(ctx, wait)
	if err != nil {
		s.flight.giveBack()
		s.flight.giveBack()
		return queued{}, err
	}
	if stale == nil && l.pathKnown.Load() {
		stale = s.takeOther()
	}
	var n queued
	var dropped bool
	c := s.pipelined(ctx, prefix, true, true, func() error {
		var err error
		n.node, n.owner, dropped, err = l.create(prefix, stale)
		return err
	}, opCreate, opMulti)
	if stale != nil {
		s.deleteSent(stale) // on the wire: a create on its path may follow
	}
	children, stat, lerr := l.listBehind(ctx)
	select {
	case <-c.fin:
	case <-ctx.Done():
		l.abandon(c, prefix, &n, &dropped, stale)
		return queued{}, ctx.Err()
	}
	if stale != nil && !dropped {
		s.deleteInBackground(stale.node, stale.owner) // the multi did not run
	}
	if c.err != nil {
		return queued{}, c.err
	}
	l.pathKnown.Store(true)
	if lerr == nil {
		n.q, n.pzxid = l.sortQueue(children), stat.Pzxid
		if position(n.q, path.Base(n.node), "") < 0 {
			// The listing went out on a new connection before the create
			// was applied (possible only across a reconnect): list again.
			n.q = nil
		}
	}
	return n, nil
}

// listBehind lists the queue, the request pipelined behind our create
// (admitted with it: its place is given back if ctx ended first).
func (l *Lock) listBehind(ctx context.Context) ([]string, *zk.Stat, error) {
	s := l.s
	if ctx.Err() != nil {
		s.flight.giveBack()
		return nil, nil, ctx.Err()
	}
	// Written by the request's goroutine, read only after await returned
	// nil (close(c.fin) happens before): on ctx's end the request may
	// still be running, and these must not be touched.
	var children []string
	var stat *zk.Stat
	err := s.await(ctx, s.launch(true, false, func() error {
		c, st, err := s.conn.Children(l.path)
		if err == nil {
			children, stat = c, st
		}
		return err
	}))
	if err != nil {
		return nil, nil, err
	}
	return children, stat, nil
}

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
// strictly below every later holder's token.
func (l *Lock) waitTurn(ctx context.Context, n *queued, wait bool) (token int64, leads bool, err error) {
	w := &waiter{l: l, n: n, name: path.Base(n.node), pos: l.newPositions(n.node, wait)}
	defer w.stop()
	for {
		if l.s.conn.SessionID() != n.owner {
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
		if i < 0 {
			return 0, false, errNodeGone
		}
		goes, watch := l.rule(n.q, i)
		w.pos.seen(n.q, i, goes)
		if goes || !wait {
			return n.pzxid, goes, nil
		}
		fresh, err := w.arm(ctx, watch)
		if err != nil {
			if err = w.failed(ctx, err); err != nil {
				return 0, false, err
			}
			continue
		}
		if fresh {
			continue // the watch came with a listing: look at it first
		}
		if err := w.sleep(ctx); err != nil {
			return 0, false, err
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
	n       *queued
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
	s := w.l.s
	var children []string
	var stat *zk.Stat
	err := s.call(ctx, false, func() error {
		c, st, err := s.conn.Children(w.l.path)
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
	s := w.l.s
	target := childrenWatched
	if watch != watchChildren {
		target = w.l.path + "/" + w.n.q[watch].name
	}
	if target == w.watched {
		return false, nil
	}
	w.drop()
	w.signal = mutexbool.New(false)
	if s.dispatching() {
		// Registered before the request, so that no event after it is
		// missed. The callback runs on go-zookeeper's event goroutine.
		wp, sig := target, w.signal
		if target == childrenWatched {
			wp = w.l.path
		}
		w.unwatch = s.watch(wp, func(zk.Event) { sig.Set(true) })
	}
	var ev <-chan zk.Event
	var children []string
	var stat *zk.Stat
	err = s.call(ctx, false, func() error {
		if target == childrenWatched {
			c, st, ch, err := s.conn.ChildrenW(w.l.path)
			if err == nil {
				children, stat, ev = c, st, ch
			}
			return err
		}
		// A data watch: an exists watch on a node that is already gone
		// would stay behind.
		_, _, ch, err := s.conn.GetW(target)
		if err == nil {
			ev = ch
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
	if !s.dispatching() {
		w.ev = ev
	}
	return target == childrenWatched, nil
}

// sleep waits for the watch, the re-check or the end of the wait.
func (w *waiter) sleep(ctx context.Context) error {
	s := w.l.s
	if w.timer == nil {
		w.timer = time.NewTimer(w.l.recheck)
	} else {
		w.timer.Reset(w.l.recheck)
	}
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
	case <-s.ctx.Done():
		return s.closedErr()
	}
	w.timer.Stop()
	return nil
}

// failed handles the error of a request on the queue: the lock path gone
// ends the wait (our node went with it), a refusal or the end of ctx ends
// it with the error, and anything else (the request's fate unknown) is
// retried after a pause.
func (w *waiter) failed(ctx context.Context, err error) error {
	s := w.l.s
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return errNodeGone
	case refusal(err) || ctx.Err() != nil:
		return err
	}
	if w.pauses == nil {
		w.pauses = s.newBackOff()
	}
	if !sleepCtx(ctx, w.pauses.NextBackOff()) {
		return ctx.Err()
	}
	if s.isClosed() {
		return s.closedErr()
	}
	return nil
}

// drop forgets the watch: its callback, and its channel.
func (w *waiter) drop() {
	if w.unwatch != nil {
		w.unwatch()
		w.unwatch = nil
	}
	w.watched, w.ev = "", nil
}

// stop ends the waiter.
func (w *waiter) stop() {
	w.drop()
	if w.timer != nil {
		w.timer.Stop()
	}
}
