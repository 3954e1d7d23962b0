package zklock

import (
	"context"
	"errors"
	"path"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/wire"
)

// Queueing: an acquisition's attempt, and the creation of our node with the
// listing pipelined behind it (the unknown outcome's handling is in
// retry.go; the wait for our turn in wait.go).

// errParentsMade asks retry to create our node again once the missing
// parents exist.
var errParentsMade = errors.New("zklock: lock path created")

// errNodeGone reports that our queued node disappeared before we held the
// lock.
var errNodeGone = errors.New("zklock: lock node vanished while queued")

// errBusyDelete makes TryAcquire report false: our previous node is still
// queued.
var errBusyDelete = errors.New("zklock: previous node not yet deleted")

// ourNode is our node in the queue, as enqueue leaves it.
type ourNode struct {
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
	s.countWaiting(1)
	defer s.countWaiting(-1)
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
	s.dels.add(l.path, n.node, n.owner)
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
func (l *Lock) enqueue(ctx context.Context, wait bool) (ourNode, error) {
	s := l.s
	// Credentials first (WithDigestAuth): a create under an ACL that
	// only they satisfy would be refused, or made anonymous.
	if err := s.awaitAuth(ctx); err != nil {
		return ourNode{}, err
	}
	guid := newGUID()
	prefix := l.path + "/" + protectedPrefix + guid + l.marker
	n, err := l.createAndList(ctx, prefix, wait)
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, errBusyDelete):
		return ourNode{}, err // nothing was sent
	case ctx.Err() == nil:
		return l.enqueueAgain(ctx, guid, prefix, err)
	case !refusal(err) && !errors.Is(err, ctx.Err()):
		// The create failed, its outcome unknown, as ctx ended (when ctx
		// ended first, abandon sweeps): the node may be there.
		l.sweepInBackground(guid)
		return ourNode{}, ctx.Err()
	}
	return ourNode{}, err
}

// createAndList is one create of our node with the listing pipelined
// behind it, the two admitted together by the bound on requests in flight.
// Only once admitted does the create take a pending delete to carry: this
// path's own (a released node of ours on the path, which it must carry or
// wait to see written), or else another path's. Taken before admission, a
// delete would wait behind the session's whole backlog, its node first in
// its queue all the while, where the flusher, exempt from the bound, sends
// it within foldWait (model/deletes.pml, MUTANT_TAKE_BEFORE_ADMISSION).
func (l *Lock) createAndList(ctx context.Context, prefix string, wait bool) (ourNode, error) {
	s := l.s
	if err := s.flight.acquire(ctx, 2, s.life.ctx.Done()); err != nil {
		return ourNode{}, err
	}
	stale, err := l.takeDelete(ctx, wait)
	if err != nil {
		s.flight.giveBack()
		s.flight.giveBack()
		return ourNode{}, err
	}
	if stale == nil && l.pathKnown.Load() {
		stale = s.dels.takeOther()
	}
	var n ourNode
	var dropped bool
	c := s.pipeline(ctx, prefix, request{write: true, admitted: true, do: func() error {
		var err error
		n.node, n.owner, dropped, err = l.create(prefix, stale)
		return err
	}}, wire.OpCreate, wire.OpMulti)
	if stale != nil {
		s.dels.sent(stale) // on the wire: a create on its path may follow
	}
	children, stat, lerr := l.listBehind(ctx)
	select {
	case <-c.fin:
	case <-ctx.Done():
		l.abandon(c, prefix, &n, &dropped, stale)
		return ourNode{}, ctx.Err()
	}
	if stale != nil && !dropped {
		s.deleteInBackground(stale.node, stale.owner) // the multi did not run
	}
	if c.err != nil {
		return ourNode{}, c.err
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
	// Written by the request's goroutine, read only after wait returned
	// nil (close(c.fin) happens before): on ctx's end the request may
	// still be running, and these must not be touched.
	var children []string
	var stat *zk.Stat
	err := s.launch(request{admitted: true, do: func() error {
		c, st, err := s.conn.Children(l.path)
		if err == nil {
			children, stat = c, st
		}
		return err
	}}).wait(ctx)
	if err != nil {
		return nil, nil, err
	}
	return children, stat, nil
}

// takeDelete returns the pending delete of the session that our create
// carries, after waiting until this path's delete is on the wire (see
// deleteQueue.take). TryAcquire does not wait through a disconnection:
// the lock counts as taken (by our own old node) until the delete can be
// sent.
func (l *Lock) takeDelete(ctx context.Context, wait bool) (*pendingDelete, error) {
	s := l.s
	for {
		d, inFlight := s.dels.take(l.path)
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
