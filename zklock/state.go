package zklock

import (
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

// onEvent is go-zookeeper's event callback. go-zookeeper calls it
// synchronously, for every event, from the connection's own goroutines,
// sometimes while holding its locks: it must not block, nor make requests;
// it may read Conn.State and Conn.SessionID. It does only what tracking
// the state needs; user code (the state listener) runs elsewhere.
func (s *Session) onEvent(ev zk.Event) {
	switch ev.Type {
	case zk.EventSession:
		if ev.State == zk.StateHasSession {
			s.connGen.Add(1) // before go-zookeeper re-sends credentials: see addDigest
		}
		s.observe(ev.State)
	case zk.EventNotWatching:
		// Sent for each watched path when the session expired: a holder
		// whose own-node watch is gone can no longer see its node deleted.
		s.notWatching(ev.Path)
	}
}

// pollEvery is how often a NewSession reads its connection's state; a
// variable so that a test can make the poll lag.
var pollEvery = 5 * time.Millisecond

// poll feeds observe under NewSession, from events and from the
// connection's state, read often enough that a short disconnection or a
// session change is seen even when the channel dropped its event.
func (s *Session) poll(events <-chan zk.Event) {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	quit := s.quit
	for {
		select {
		case <-quit:
			// The caller closed the connection: the session is over for
			// good, and every wait on it must end.
			quit = nil
			s.connGone.Store(true)
			s.closeState()
			s.cancel()
		case ev, ok := <-events:
			if !ok {
				events = nil
				s.closeState()
				continue
			}
			s.onEvent(ev)
		case <-t.C:
			s.observe(s.conn.State())
		case <-s.ctx.Done():
			return
		}
	}
}

// observe applies a connection state reported by go-zookeeper. A holder
// must hear of a possible loss as soon as the client knows of it, so the
// holds are ended here, synchronously.
func (s *Session) observe(zs zk.State) {
	conn := s.zc.Load()
	if conn == nil {
		return // Connect has not returned yet; it calls observe then
	}
	id := conn.SessionID()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	var st State
	var lost []*hold
	var cause error
	switch zs {
	case zk.StateHasSession:
		if id == 0 {
			s.mu.Unlock()
			return
		}
		if s.tap == nil {
			// zs was loaded after go-zookeeper wrote the timeout.
			if d := grantedTimeout(conn); d > 0 {
				s.granted.Store(int64(d))
			}
		}
		if s.sessionID != 0 && id != s.sessionID {
			// A new session: the old one is over, and its nodes with it,
			// whatever events we saw or missed in between.
			lost, cause = s.takeHolds(), ErrSessionExpired
			s.lease.reset()
		}
		s.sessionID = id
		st = StateConnected
	case zk.StateDisconnected, zk.StateConnecting, zk.StateConnected:
		// Connecting and Connected are TCP states: no session on them yet.
		if s.state != StateConnected {
			s.mu.Unlock()
			return
		}
		st = StateDisconnected
		if !s.cfg.expiryOnly {
			lost, cause = s.takeHolds(), ErrDisconnected
		}
	case zk.StateExpired:
		st = StateExpired
		lost, cause = s.takeHolds(), ErrSessionExpired
		s.lease.reset()
	default:
		s.mu.Unlock()
		return
	}
	s.setStateLocked(st, id)
	s.mu.Unlock()
	for _, h := range lost {
		h.lose(cause)
	}
}

// setStateLocked records st and tells whoever waits on a change.
func (s *Session) setStateLocked(st State, id int64) {
	if st == s.state {
		return
	}
	s.state = st
	close(s.changed)
	s.changed = make(chan struct{})
	if st == StateConnected {
		select {
		case <-s.ready:
		default:
			close(s.ready)
		}
	}
	s.notes.push(st)
	s.log.Info("zookeeper session state", "state", st, "session", fmt.Sprintf("0x%x", id))
}

// closeState moves the session to StateClosed and ends every hold.
func (s *Session) closeState() {
	s.mu.Lock()
	if s.state == StateClosed {
		s.mu.Unlock()
		return
	}
	lost := s.takeHolds()
	s.setStateLocked(StateClosed, s.sessionID)
	s.mu.Unlock()
	for _, h := range lost {
		h.lose(ErrSessionClosed)
	}
}

// notWatching ends the hold whose own-node watch on path was dropped.
func (s *Session) notWatching(path string) {
	s.mu.Lock()
	var lost *hold
	for h := range s.holds {
		if h.node == path {
			lost = h
			delete(s.holds, h)
			break
		}
	}
	s.mu.Unlock()
	if lost != nil {
		lost.lose(ErrSessionExpired)
	}
}

// takeHolds empties the set of valid holds and returns them. s.mu is held.
func (s *Session) takeHolds() []*hold {
	if len(s.holds) == 0 {
		return nil
	}
	hs := make([]*hold, 0, len(s.holds))
	for h := range s.holds {
		hs = append(hs, h)
	}
	clear(s.holds)
	return hs
}

// forget removes h from the valid holds (released, or lost by its own
// watch).
func (s *Session) forget(h *hold) {
	s.mu.Lock()
	delete(s.holds, h)
	s.mu.Unlock()
}

// queued counts an acquisition that has (or is creating) a node, so that
// the lease is kept fresh for its grant.
func (s *Session) queued(delta int) {
	s.mu.Lock()
	s.waiting += delta
	s.mu.Unlock()
	if delta > 0 {
		s.lease.wake()
	}
}

// stateChanged returns a channel closed at the next state change.
func (s *Session) stateChanged() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}
