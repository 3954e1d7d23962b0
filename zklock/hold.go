package zklock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"
)

// hold is one acquisition: our node, its fencing token and its loss.
type hold struct {
	l        *Lock
	node     string // full path
	owner    int64  // the session that created node
	lost     chan struct{}
	lostOnce sync.Once
	cause    error // written before lost closes
	released atomic.Bool
	dropOnce sync.Once

	revoked    chan struct{} // closed on a revocation request; nil unless revocable (revoke.go)
	revokeOnce sync.Once

	// The fencing token is our node's czxid, from the first answer of the
	// data watch on our own node (watchOwn). token is written before
	// tokenKnown is closed; ended is closed by Release, so that a wait for
	// the token cannot outlast the hold.
	token      int64
	tokenKnown chan struct{}
	ended      chan struct{}
	endOnce    sync.Once
}

func (h *hold) isLost() bool {
	select {
	case <-h.lost:
		return true
	default:
		return false
	}
}

// lose ends the hold with cause, once: it closes lost, tells the lock's
// loss handler, and gives the node up (the delete waits for the connection
// if need be, and is moot when the session is gone). It may run on
// go-zookeeper's event goroutine: nothing here blocks.
func (h *hold) lose(cause error) {
	first := false
	h.lostOnce.Do(func() {
		h.cause = cause
		close(h.lost)
		first = true
	})
	if !first {
		return
	}
	l := h.l
	l.s.forget(h)
	if h.released.Load() {
		return
	}
	l.s.log.Warn("lock lost", "node", h.node, "cause", cause)
	if l.onLost != nil {
		l.onLost(h.node, cause)
	}
	l.dropNode(h)
}

// lead turns our leading node into a hold with the fencing token, or 0
// when it is not known yet (the holder's own-node watch reads it).
//
// The token is our node's czxid, or, when the listing that found our node
// first had no other contender in it, that listing's pzxid. Why tokens
// strictly increase along the holders of a path, mixing the two kinds:
//   - Sequence numbers are handed out in creation order, and a node leads
//     only once every node ahead of it is gone, so successive holders hold
//     nodes of increasing sequence, and so of increasing czxid.
//   - A listing L that found our node alone was read after our create (it
//     is sent behind it on our session, or later), so L.pzxid >= our czxid.
//     Every later holder's node was created after L: one created before L
//     would have been in L (it still existed: it holds later), and we were
//     alone. So a later holder's czxid, and any pzxid of a listing that
//     saw its node, exceed L.pzxid.
//   - An earlier holder's token is below ours by the same two arguments
//     with the roles swapped.
//
// The pzxid of a listing that saw other contenders cannot be used: it can
// exceed the czxid of a node behind ours that was created before the
// listing (the token before this change took that pzxid, so a fleet
// upgrading must not compare tokens across the two versions).
//
// So an uncontended acquisition (its pipelined listing finds it alone)
// and a waiter (which reads its czxid while it waits, with a plain read:
// a waiting process keeps one watch) are granted with their token known.
// A node that led at once behind others in the queue gets its token from
// the holder's own-node watch, a round trip after the grant; Token waits
// for it.
func (l *Lock) lead(node string, owner, token int64) *hold {
	h := &hold{l: l, node: node, owner: owner, lost: make(chan struct{}),
		tokenKnown: make(chan struct{}), ended: make(chan struct{})}
	if l.revocable {
		h.revoked = make(chan struct{})
	}
	if token != 0 {
		h.token = token
		close(h.tokenKnown)
	}
	return h
}

// end marks the hold released.
func (h *hold) end() {
	h.released.Store(true)
	h.endOnce.Do(func() { close(h.ended) })
}

// tokenOf waits for h's fencing token: it is known once the data watch on
// our node has been answered, a round trip after the grant. It returns
// ErrNotHeld when h ends first and ctx's error when ctx ends first.
func (h *hold) tokenOf(ctx context.Context) (int64, error) {
	select {
	case <-h.tokenKnown:
		return h.token, nil
	default:
	}
	select {
	case <-h.tokenKnown:
		return h.token, nil
	case <-h.ended:
	case <-h.lost:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	select { // known after all: a token is a token even for a lost hold
	case <-h.tokenKnown:
		return h.token, nil
	default:
	}
	if h.isLost() {
		return 0, fmt.Errorf("%w: %w", ErrLockLost, h.cause)
	}
	return 0, ErrNotHeld
}

// install makes h the current hold once the session can vouch for it: h's
// session is the current one, and the lease (lease.go) lies ahead, or a
// sync has renewed it. It returns errNodeGone when h's session is over (the
// node went with it) and ctx's error when ctx ends first.
func (l *Lock) install(ctx context.Context, h *hold) error {
	s := l.s
	for attempt := 0; ; attempt++ {
		s.mu.Lock()
		lagging := false
		switch {
		case s.closed:
			s.mu.Unlock()
			return ErrSessionClosed
		case h.owner != s.conn.SessionID():
			// The client holds another session (or none, after an expiry):
			// the node went with the one that made it.
			s.mu.Unlock()
			return errNodeGone
		case h.owner != s.sessionID:
			// The connection has the node's session but our view of it
			// lags (under NewSession it is polled): wait for it rather
			// than give up a node that exists.
			lagging = true
		case s.state != StateConnected && !(s.cfg.expiryOnly && s.state == StateDisconnected):
			// Not connected: wait for the connection, or for news that
			// the session is over.
		case s.lease.validLocked(time.Now()):
			s.holds[h] = struct{}{}
			s.lease.armLocked()
			s.mu.Unlock()
			l.mu.Lock()
			closed := l.closed
			if !closed {
				l.hold = h
			}
			l.mu.Unlock()
			if closed {
				s.forget(h)
				return ErrClosed
			}
			l.s.goBackground(func() { l.watchOwn(h) })
			return nil
		}
		changed := s.changed
		s.mu.Unlock()
		var refreshed <-chan struct{}
		if s.State() == StateConnected {
			refreshed = s.lease.refresh()
		}
		var lag <-chan time.Time
		if lagging {
			lag = time.After(5 * time.Millisecond) // a polled state catches up within a tick
		}
		select {
		case <-lag:
		case <-refreshed:
			if attempt > 0 {
				// The leader did not confirm us: do not spin.
				if !sleepCtx(ctx, min(time.Duration(attempt)*10*time.Millisecond, s.cfg.maxRetryWait)) {
					return ctx.Err()
				}
			}
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.ctx.Done():
			return ErrSessionClosed
		}
	}
}

// watchOwn watches the holder's own node until the hold ends: its deletion
// by someone else, or the watch's end with the session, ends the hold.
// Errors that leave the node's fate open are retried. The watch is a data
// read, so every (re-)arming also reads the data: that is where a
// revocation request is seen (revoke.go), at no extra request, whether it
// was written before the hold began (while our node waited), while the
// connection was down (go-zookeeper re-arms the watch with setWatches, and
// the server fires it for a change it missed), or during the hold. Its
// first answer also gives the fencing token when the grant did not (lead).
func (l *Lock) watchOwn(h *hold) {
	s := l.s
	b := s.newBackOff()
	for !h.isLost() && !h.released.Load() {
		data, stat, ev, err := s.conn.GetW(h.node)
		if !l.checkOwn(h, stat, err, b) {
			return
		}
		if ev == nil {
			continue // the request failed: try again (checkOwn paused)
		}
		b.Reset()
		if h.revoked != nil && IsRevocation(data) {
			l.revoke(h)
		}
		select {
		case e := <-ev:
			switch e.Type {
			case zk.EventNodeDeleted:
				h.lose(ErrNodeDeleted)
				return
			case zk.EventNotWatching:
				h.lose(ErrSessionExpired)
				return
			}
			// Data changed (a revocation request, say): watch again.
		case <-h.lost:
			return
		case <-s.ctx.Done():
			return
		}
	}
}

// checkOwn handles the answer of a GetW on the holder's own node. It
// returns false when the hold is over; on an error it returns true after a
// pause, for the caller to try again (it passes a nil watch then).
func (l *Lock) checkOwn(h *hold, stat *zk.Stat, err error, b backoff.BackOff) bool {
	s := l.s
	switch {
	case errors.Is(err, zk.ErrNoNode):
		h.lose(ErrNodeDeleted)
		return false
	case err != nil:
		if s.conn.SessionID() != h.owner {
			h.lose(ErrSessionExpired)
			return false
		}
		t := time.NewTimer(b.NextBackOff())
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-h.lost:
		case <-s.ctx.Done():
		}
		return false
	case stat.EphemeralOwner != h.owner:
		// The node was created in an older session than we thought
		// (a reconnect raced the create's reply): it dies with that one.
		h.lose(ErrSessionExpired)
		return false
	}
	select {
	case <-h.tokenKnown:
	default: // the first answer: watchOwn is the only writer
		h.token = stat.Czxid
		close(h.tokenKnown)
	}
	return true
}

// dropNode deletes a lost hold's node once, through the same pending
// delete as a release, so that the session's next create queues behind it.
func (l *Lock) dropNode(h *hold) {
	h.dropOnce.Do(func() {
		if l.s.hardStopped() {
			return // the session's close deletes it
		}
		l.s.pipe.queueDelete(l.path, h.node, h.owner)
	})
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
