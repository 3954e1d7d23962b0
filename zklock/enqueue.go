package zklock

import (
	"context"
	"errors"
)

// Queueing: an acquisition's attempt, one node queued (create.go) and
// waited on (wait.go), then granted.

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
		if err = s.grant(ctx, n.owner, h); err == nil {
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

// newHold makes the hold of a node that leads, with its fencing token (see
// waitTurn).
func (l *Lock) newHold(node string, owner, token int64) *Hold {
	h := &Hold{s: l.s, path: l.path, lock: l, node: node, owner: owner, token: token, lost: make(chan struct{})}
	if l.revocable {
		h.revoked = make(chan struct{})
	}
	return h
}
