package zklock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// hold is one acquisition: our node, its fencing token and its loss.
type hold struct {
	l        *Lock
	node     string // full path
	owner    int64  // the session that created node
	token    int64
	lost     chan struct{}
	lostOnce sync.Once
	cause    error // written before lost closes
	released atomic.Bool
	dropOnce sync.Once

	revoked    chan struct{} // closed on a revocation request; nil unless revocable (revoke.go)
	revokeOnce sync.Once
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

// lead turns our leading node into a hold and starts the watch on our own
// node, through which a deletion by someone else is noticed. The fencing
// token is the pzxid of the listing that found our node first: the zxid of
// the last change to the queue, which is at least our node's creation zxid
// and, since a successor can only lead on a listing taken after our node's
// deletion, strictly below every later holder's token. Taking it from the
// listing saves the read of our own node that czxid would cost.
func (l *Lock) lead(node string, owner, token int64) *hold {
	h := &hold{l: l, node: node, owner: owner, token: token, lost: make(chan struct{})}
	if l.revocable {
		h.revoked = make(chan struct{})
	}
	return h
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
		if attempt == 0 && !lagging && s.State() == StateConnected {
			s.lease.waits.Add(1) // connected, yet the lease is not valid
		}
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
// the server fires it for a change it missed), or during the hold.
func (l *Lock) watchOwn(h *hold) {
	s := l.s
	b := s.newBackOff()
	for !h.isLost() && !h.released.Load() {
		data, stat, ev, err := s.conn.GetW(h.node)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			h.lose(ErrNodeDeleted)
			return
		case err != nil:
			if s.conn.SessionID() != h.owner {
				h.lose(ErrSessionExpired)
				return
			}
			t := time.NewTimer(b.NextBackOff())
			select {
			case <-t.C:
			case <-h.lost:
				t.Stop()
				return
			case <-s.ctx.Done():
				t.Stop()
				return
			}
			continue
		case stat.EphemeralOwner != h.owner:
			// The node was created in an older session than we thought
			// (a reconnect raced the create's reply): it dies with that one.
			h.lose(ErrSessionExpired)
			return
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
