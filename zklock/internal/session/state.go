package session

import (
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/mutant"
	"github.com/tierlock/tierlock/internal/trace"
)

// onEvent is go-zookeeper's event callback. go-zookeeper calls it
// synchronously, for every event, from the connection's own goroutines,
// sometimes while holding its locks: it must not block, nor make requests;
// it may read Conn.State and Conn.SessionID. It does only what tracking
// the state needs; user code (the state listener) runs elsewhere.
func (s *Floor) onEvent(ev zk.Event) {
	if trace.Enabled { // guarded: the atomic load would stay in a build without the tag
		trace.Evented(s.link.zc.Load(), ev) // nil until zk.Connect returns (s.conn is set then)
	}
	switch ev.Type {
	case zk.EventSession:
		if ev.State == zk.StateHasSession {
			s.link.connGen.Add(1) // before go-zookeeper re-sends credentials: see addDigest
		}
		s.observe(ev.State)
	default:
		if ev.Path != "" {
			s.dispatch(ev)
		}
	}
}

// Watch registers fn for the next event on path and returns the function
// that removes it (a no-op once it ran). fn runs on go-zookeeper's event
// goroutine: it must not block.
func (s *Floor) Watch(path string, fn func(zk.Event)) (unwatch func()) {
	w := &watchFn{fn: fn}
	s.watches.mu.Lock()
	if s.watches.m == nil {
		s.watches.m = make(map[string][]*watchFn)
	}
	s.watches.m[path] = append(s.watches.m[path], w)
	s.watches.mu.Unlock()
	return func() {
		s.watches.mu.Lock()
		defer s.watches.mu.Unlock()
		ws := s.watches.m[path]
		for i, x := range ws {
			if x == w {
				ws = append(ws[:i], ws[i+1:]...)
				break
			}
		}
		if len(ws) == 0 {
			delete(s.watches.m, path)
		} else {
			s.watches.m[path] = ws
		}
	}
}

// dispatch calls, and removes, the callbacks registered on ev's path.
func (s *Floor) dispatch(ev zk.Event) {
	s.watches.mu.Lock()
	ws := s.watches.m[ev.Path]
	delete(s.watches.m, ev.Path)
	s.watches.mu.Unlock()
	for _, w := range ws {
		w.fn(ev)
	}
}

// pollEvery is how often a floor made by Wrap reads its connection's state; a
// variable so that a test can make the poll lag.
var pollEvery = 5 * time.Millisecond

// poll feeds observe under Wrap, from events and from the
// connection's state, read often enough that a short disconnection or a
// session change is seen even when the channel dropped its event.
func (s *Floor) poll(events <-chan zk.Event) {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	quit := s.link.quit
	for {
		select {
		case <-quit:
			// The caller closed the connection: the session is over for
			// good, and every wait on it must end.
			quit = nil
			s.link.connGone.Store(true)
			s.closeState()
			s.life.cancel()
		case ev, ok := <-events:
			if !ok {
				events = nil
				s.closeState()
				continue
			}
			s.onEvent(ev)
		case <-t.C:
			s.observe(s.conn.State())
		case <-s.life.ctx.Done():
			return
		}
	}
}

// observe applies a connection state reported by go-zookeeper. A holder
// must hear of a possible loss as soon as the client knows of it, so the
// holds are ended here, synchronously.
func (s *Floor) observe(zs zk.State) {
	started := s.link.conn.Load()
	if started == nil {
		return // zk.Connect has not returned yet; Dial calls observe then
	}
	id := (*started).SessionID()
	s.st.mu.Lock()
	if s.st.closed {
		s.st.mu.Unlock()
		return
	}
	prev := s.st.sessionID
	t := s.transitionLocked(zs, id)
	if !t.moved {
		s.st.mu.Unlock()
		// A server that took the connection and dropped it before a first
		// session (one not serving, say): an outage too.
		if t.tcp && s.link.tcpUp.Swap(zs == zk.StateConnected) && t.beforeFirst && zs == zk.StateDisconnected {
			s.outageBegins("connections closed before a session was made", 0)
		}
		return
	}
	s.setStateLocked(t.st, id)
	s.st.mu.Unlock()
	s.tellOutage(zs, prev, id, len(t.lost))
	s.st.lease.confirmed(t.lapsed)
	if t.st == StateConnected {
		s.noteGranted()
		s.markReady()
	}
	for _, h := range t.lost {
		h.lose(t.cause)
	}
}

// transition is what a state reported by go-zookeeper changes: the state
// it moves to (moved), the holds it ends and why.
type transition struct {
	moved       bool
	st          State
	lost        []*Member
	cause       error
	tcp         bool  // not moved: a TCP state seen while not connected
	beforeFirst bool  // and before the first session
	lapsed      int64 // the start of a lapse the connect answer ended (lease.handshake)
}

// transitionLocked applies zs, with the connection in session id, to the
// floor's state and valid holds. s.st.mu is held.
func (s *Floor) transitionLocked(zs zk.State, id int64) transition {
	switch zs {
	case zk.StateHasSession:
		if id == 0 {
			return transition{}
		}
		s.traceHandshake(id)
		if s.tap == nil {
			// zs was loaded after go-zookeeper wrote the timeout.
			if d := s.connGranted(); d > 0 {
				s.link.granted.Store(int64(d))
			}
		}
		t := transition{moved: true, st: StateConnected}
		if s.st.sessionID != 0 && id != s.st.sessionID && !mutant.On(mutant.NewSessionKeepsHolds) {
			// A new session: the old one is over, and its nodes with it,
			// whatever events we saw or missed in between.
			t.lost, t.cause = s.takeHolds(), ErrSessionExpired
			s.st.lease.reset()
		}
		s.st.sessionID = id
		t.lapsed = s.st.lease.handshake(id)
		return t
	case zk.StateDisconnected, zk.StateConnecting, zk.StateConnected:
		// Connecting and Connected are TCP states: no session on them yet.
		if s.st.state != StateConnected {
			return transition{tcp: true, beforeFirst: s.st.sessionID == 0}
		}
		t := transition{moved: true, st: StateDisconnected}
		if !s.cfg.ExpiryOnly {
			t.lost, t.cause = s.takeHolds(), ErrDisconnected
		}
		return t
	case zk.StateExpired:
		s.st.lease.reset()
		return transition{moved: true, st: StateExpired, lost: s.takeHolds(), cause: ErrSessionExpired}
	}
	return transition{}
}

// traceHandshake records, under Wrap (no tap reads the server's
// answer), the timeout the server granted to a session seen for the first
// time, which the replay derives the lease's bounds from. s.st.mu is held.
func (s *Floor) traceHandshake(id int64) {
	if trace.Enabled && s.tap == nil && id != s.st.sessionID {
		zc := s.link.zc.Load()
		trace.ConnHandshook(zc, id, grantedTimeout(zc))
	}
}

// noteGranted warns, once per value, when the server granted a session
// timeout other than the one Dial asked for (it bounds it between 2 and
// 20 of its ticks): a crashed holder's lock then passes on after the
// granted timeout, and the loss bounds derive from it. Under Wrap the
// caller's connection asked, not the session. It warns too when the
// servers' declared tickTime is more than half the granted timeout: the
// lease's argument needs the leader to hear of the session within the
// timeout's first half (lease.go), and cannot show loss before grant.
func (s *Floor) noteGranted() {
	granted := s.timeout()
	if s.link.warned.Swap(int64(granted)) == int64(granted) {
		return
	}
	if s.tap != nil && granted != s.cfg.Timeout {
		s.log.Warn("ZooKeeper granted another session timeout than the one asked for",
			"asked", s.cfg.Timeout, "granted", granted)
	}
	if tick := s.cfg.ServerTick; tick > 0 && 2*tick > granted {
		s.log.Warn("the servers' tickTime is more than half the session timeout: a follower may report this session to the leader too seldom for the lease to show loss before grant; ask a session timeout of at least two ticks",
			"tick", tick, "session_timeout", granted)
	}
}

// setStateLocked records st and tells whoever waits on a change.
func (s *Floor) setStateLocked(st State, id int64) {
	if st == s.st.state {
		return
	}
	s.st.state = st
	close(s.st.changed)
	s.st.changed = make(chan struct{})
	s.notes.push(st)
	s.log.Info("zookeeper session state", "state", st, "session", fmt.Sprintf("0x%x", id))
}

// markReady tells Dial that the first session is made (closes ready,
// once). observe calls it after the outage's end is told, not as it sets
// the state: Connect returns after the log says the session is
// established, so that nothing the program logs next comes before it.
func (s *Floor) markReady() {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	select {
	case <-s.st.ready:
	default:
		close(s.st.ready)
	}
}

// closeState moves the session to StateClosed and ends every hold.
func (s *Floor) closeState() {
	s.st.mu.Lock()
	if s.st.state == StateClosed {
		s.st.mu.Unlock()
		return
	}
	lost := s.takeHolds()
	s.setStateLocked(StateClosed, s.st.sessionID)
	s.st.mu.Unlock()
	s.outageEnds("the session was closed", 0, 0)
	for _, h := range lost {
		h.lose(ErrClosed)
	}
}

// takeHolds empties the set of valid holds and returns them. s.st.mu is held.
func (s *Floor) takeHolds() []*Member {
	if len(s.st.holds) == 0 {
		return nil
	}
	hs := make([]*Member, 0, len(s.st.holds))
	for h := range s.st.holds {
		hs = append(hs, h)
	}
	clear(s.st.holds)
	return hs
}

// stateChanged returns a channel closed at the next state change.
func (s *Floor) stateChanged() <-chan struct{} {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return s.st.changed
}
