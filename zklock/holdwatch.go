package zklock

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/session"
)

// The own-node watch: a data watch on the holder's own node, through which
// a deletion by someone else (an operator's break) and a revocation
// request are noticed. It does nothing for loss before grant: when our node
// goes (an expiry, a deletion), our event and the next holder's are sent
// concurrently, so the next grant can come before we hear; the lease
// (lease.go) is what tells the holder first. So it is armed only where it
// buys something: at once for a revocable hold (a request written while
// the node waited is seen at the first read), and for other holds once
// they have lasted a quarter of the session timeout, after which an operator's deletion
// is seen within a round trip instead of at the release. A hold that ends
// sooner costs no request and no event. It is armed as the hold is
// published (publish, armWatch: at the end of this file). Its read goes
// with the session's other reads where the session sets watches itself
// (readWatched): a registry's keys, held past the quarter one after the
// other, arm theirs about together, and a batch of them costs two
// requests, not one each. Such a watch lives on its connection: the hold
// reads and watches again when the session's next one is made.

// watchOwn reads the hold's node and watches it: a deletion, or the
// watch's end with the session, ends the hold; a revocation request in its
// data is passed on; a data change arms it again. Errors that leave the
// node's fate open are retried after a pause. It runs on a goroutine of
// its own (time.AfterFunc's, or the one a data change starts), briefly:
// under Connect the event reaches the session's callback; under NewSession
// it waits for the event here.
func (h *Hold) watchOwn() {
	f := h.f
	if h.isLost() || h.released.Load() || f.Closed() {
		return
	}
	r, err := h.readWatched()
	if !h.watchRead(r.Stat, err) {
		r.Unwatch()
		return
	}
	h.mu.Lock()
	if h.watching == nil && (h.isLost() || h.released.Load()) {
		h.mu.Unlock()
		r.Unwatch()
		return
	}
	h.unwatch, h.pauses = r.Unwatch, nil
	h.mu.Unlock()
	if h.revoked != nil && IsRevocation(r.Data) {
		h.lock.tellRevoked(h)
	}
	if r.Events != nil {
		// No event callback (NewSession): the event arrives on Events only.
		select {
		case e := <-r.Events:
			h.onOwnEvent(e)
		case <-h.lost:
		case <-f.Done():
		}
	}
}

// readWatched reads the hold's node with a data watch, its event told to
// onOwnEvent, the way the floor chooses (Floor.Watch): with the session's
// other reads where the session sets watches itself, so that the watches
// of many held keys, armed as their holds come of age, leave together as
// the waiters' do; such a watch is the session's own, and its callback
// runs at the session's next connection too (the hold reads and watches
// again). Its place in the Flight is the floor's to wait for: a closed
// floor ends the wait (Admit), and answers the read (the request runs in
// the floor's life).
func (h *Hold) readWatched() (session.Read, error) {
	f := h.f
	if err := f.Flight().Admit(context.Background(), 1); err != nil {
		return session.Read{Unwatch: func() {}}, err
	}
	return f.Watch(context.Background(), h.node, false, h.onOwnEvent)
}

// watchRead handles the own-node watch's read: false when it did not set a
// watch (the node is gone, or not ours, or the read failed and is retried).
func (h *Hold) watchRead(stat *zk.Stat, err error) bool {
	switch {
	case errors.Is(err, zk.ErrNoNode):
		h.lose(ErrNodeDeleted)
	case err != nil:
		h.retryWatch(err)
	case stat.EphemeralOwner != h.owner:
		// The node was created in an older session than we thought (a
		// reconnect raced the create's reply): it dies with that one.
		h.lose(ErrSessionExpired)
	default:
		return true
	}
	return false
}

// onOwnEvent handles an event of the own-node watch. It may run on
// go-zookeeper's event goroutine: it does not block.
func (h *Hold) onOwnEvent(ev zk.Event) {
	switch ev.Type {
	case zk.EventNodeDeleted:
		h.lose(ErrNodeDeleted)
	case zk.EventNotWatching:
		h.lose(ErrSessionExpired)
	case zk.EventSession:
		// The session's own watch (AddOwn) ended with its connection: set
		// again on the next, as go-zookeeper sets its own; or the session
		// expired.
		if ev.State == zk.StateExpired {
			h.lose(ErrSessionExpired)
		} else {
			h.watchAgain()
		}
	case zk.EventNodeDataChanged:
		h.watchAgain() // a revocation request, say: read it
	}
}

// watchAgain reads and watches the hold's node again, its callback gone
// with the event that ran it.
func (h *Hold) watchAgain() {
	h.mu.Lock()
	h.unwatch = nil
	h.mu.Unlock()
	h.f.Go(h.watchOwn)
}

// retryWatch arms the own-node watch again after a pause, when err left
// the node's fate open; a session that is over ends the hold. The pauses
// are the session's retry policy's (10 ms, growing to MaxRetryWait while
// the reads keep failing): a read that its connection's end failed is
// made again at once, and waits for the next connection (the session's
// own reads in the tap, written after go-zookeeper's credentials;
// go-zookeeper's GetW in its queue, failed with zk.ErrNoServer only after
// a round of every server, then made again after a longer pause), so the
// node is watched again as soon as the session can, not a whole
// MaxRetryWait later.
func (h *Hold) retryWatch(err error) {
	f := h.f
	if f.Conn().SessionID() != h.owner {
		h.lose(ErrSessionExpired)
		return
	}
	f.Log().Debug("own-node watch failed; retrying", "node", h.node, "err", err)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.watching == nil {
		return
	}
	if h.pauses == nil {
		h.pauses = f.NewBackOff()
	}
	h.watching = time.AfterFunc(h.pauses.NextBackOff(), h.watchOwn)
}

// publish makes the granted h its lock's hold (attach), unless the lock
// was closed meanwhile, and arms its own-node watch (at once when watch).
func (h *Hold) publish(watch bool) error {
	if !h.lock.attach(h) {
		h.released.Store(true)
		h.giveUp()
		return ErrClosed
	}
	h.armWatch(watch)
	return nil
}

// armWatch arms the hold's own-node watch when it is worth it (watchOwn
// runs it): at once when atOnce, else once the hold has lasted a quarter
// of the session timeout.
func (h *Hold) armWatch(atOnce bool) {
	d := h.f.Lease().Timeout() / 4
	if atOnce {
		d = 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.isLost() || h.released.Load() {
		return
	}
	h.watching = time.AfterFunc(d, h.watchOwn)
}
