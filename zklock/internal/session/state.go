package session

import (
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/mutant"
	"github.com/tierlock/tierlock/internal/trace"
)

// sessionState is the session's state as its locks see it, under mu: the
// state, the session, and the holds the floor vouches for (grant.go); the
// lease's fields are guarded by mu too (lease.go). Its methods track the
// state from go-zookeeper's events (onEvent) or from polling (poll), and
// end the holds on a disconnection, an expiry or a new session (observe).
// The watch events onEvent dispatches go to the Watches (below).
type sessionState struct {
	s         *Floor
	mu        sync.Mutex
	state     int // one of the States (states.go)
	sessionID int64
	ready     chan struct{} // closed once the first session is made and told (markReady)
	changed   chan struct{} // closed and replaced on every state change
	closed    bool
	holds     holdSet       // valid holds of the floor's locks (member.go, grant.go)
	waiting   int           // acquisitions with a node queued
	active    chan struct{} // poll.go: the floor became active (Waiting), under Wrap
}

func (st *sessionState) init(s *Floor) {
	st.s = s
	st.ready, st.changed = make(chan struct{}), make(chan struct{})
	st.holds = make(holdSet)
	st.active = make(chan struct{}, 1)
}

// onEvent is go-zookeeper's event callback. go-zookeeper calls it
// synchronously, for every event, from the connection's own goroutines,
// sometimes while holding its locks: it must not block, nor make requests;
// it may read Conn.State and Conn.SessionID. It does only what tracking
// the state needs; user code (the state listener) runs elsewhere.
func (st *sessionState) onEvent(ev zk.Event) {
	s := st.s
	switch ev.Type {
	case zk.EventSession:
		if ev.State == zk.StateHasSession {
			s.link.connGen.Add(1) // before go-zookeeper re-sends credentials: see addDigest
		}
		st.observe(ev)
		if ev.State == zk.StateHasSession || ev.State == zk.StateExpired {
			s.watches.connected(ev)
		}
	default:
		if trace.Enabled { // guarded: the atomic load would stay in a build without the tag
			trace.Evented(s.link.zc.Load(), ev) // nil until zk.Connect returns (s.conn is set then)
		}
		if ev.Path != "" {
			s.watches.dispatch(ev)
		}
	}
}

// catchUp applies the connection's state as it is now: once zk.Connect
// returns (the events before it were ignored), and at each poll under
// Wrap. The state is read under mu, as observe applies it. go-zookeeper
// stores a state, then calls the callback, which waits for mu: so a state
// read under mu is never older than one the callback applied before it.
// Read outside mu, a TCP state read just before the first session's event
// was applied after it, and the session took itself for disconnected for
// good, no event coming to correct it (TestCatchUpNotOvertaken).
func (st *sessionState) catchUp() { st.apply(st.s.conn.State, nil) }

// observe applies a connection state reported by go-zookeeper's event.
func (st *sessionState) observe(ev zk.Event) { st.apply(func() zk.State { return ev.State }, &ev) }

// apply applies the state read returns, called under mu. A holder must
// hear of a possible loss as soon as the client knows of it, so the holds
// are ended here, synchronously. ev, the event that reported the state
// (nil for a state read by catchUp), is traced under mu, where the holds
// it ends are taken and a release is decided (Member.Leave): traced as it
// arrived, a release decided before the take was traced after it, its hold
// ended in the trace and never told lost (TestTraceReleaseMeetsDisconnection).
func (st *sessionState) apply(read func() zk.State, ev *zk.Event) {
	s := st.s
	started := s.link.conn.Load()
	if started == nil {
		st.traceEvent(ev) // its connection nil: no session yet
		return            // zk.Connect has not returned yet; Dial catches up then
	}
	if h := s.cfg.Hooks; h != nil && h.Applying != nil {
		h.Applying(false)
	}
	st.mu.Lock()
	st.traceEvent(ev)
	if st.closed {
		st.mu.Unlock()
		return
	}
	// The state first: go-zookeeper sets the session's id before the
	// state that announces it.
	zs := read()
	id := (*started).SessionID()
	prev := st.sessionID
	t := st.transitionLocked(zs, id)
	if !t.moved {
		st.mu.Unlock()
		st.noteTCP(t, zs)
		return
	}
	st.setStateLocked(t.st, id)
	st.mu.Unlock()
	if h := s.cfg.Hooks; h != nil && h.Applying != nil && len(t.lost) > 0 {
		h.Applying(true)
	}
	s.out.tell(zs, prev, id, len(t.lost))
	s.lease.confirmed(t.lapsed)
	if t.st == StateConnected {
		s.lease.noteGranted()
		st.markReady()
	}
	for _, h := range t.lost {
		h.lose(t.cause)
	}
}

// traceEvent traces go-zookeeper's event ev, if any (nil: a state read by
// catchUp), with the session's connection.
func (st *sessionState) traceEvent(ev *zk.Event) {
	if ev != nil && trace.Enabled {
		trace.Evented(st.s.link.zc.Load(), *ev)
	}
}

// noteTCP notes a TCP state that moved nothing: a server that took the
// connection and dropped it before a first session (one not serving,
// say) is an outage too.
func (st *sessionState) noteTCP(t transition, zs zk.State) {
	if t.tcp && st.s.link.tcpUp.Swap(zs == zk.StateConnected) && t.beforeFirst && zs == zk.StateDisconnected {
		st.s.out.begins("connections closed before a session was made", 0)
	}
}

// transition is what a state reported by go-zookeeper changes: the state
// it moves to (moved), the holds it ends and why.
type transition struct {
	moved       bool
	st          int
	lost        []*Member
	cause       error
	tcp         bool  // not moved: a TCP state seen while not connected
	beforeFirst bool  // and before the first session
	lapsed      int64 // the start of a lapse the connect answer ended (lease.handshake)
}

// transitionLocked applies zs, with the connection in session id, to the
// floor's state and valid holds. st.mu is held.
func (st *sessionState) transitionLocked(zs zk.State, id int64) transition {
	s := st.s
	switch zs {
	case zk.StateHasSession:
		if id == 0 {
			return transition{}
		}
		st.traceHandshake(id)
		if s.tap == nil {
			// Read at each poll, not only as the floor comes to the
			// session: a reconnection may fall between two polls.
			if d := connGranted(s.conn, s.link.zc.Load()); d > 0 {
				s.link.noteGrant(d, id == st.sessionID)
			}
		}
		t := transition{moved: true, st: StateConnected}
		if st.sessionID != 0 && id != st.sessionID && !mutant.On(mutant.NewSessionKeepsHolds) {
			// A new session: the old one is over, and its nodes with it,
			// whatever events we saw or missed in between.
			t.lost, t.cause = st.holds.endAll(ErrSessionExpired), ErrSessionExpired
			s.lease.reset()
		}
		st.sessionID = id
		t.lapsed = s.lease.handshake(id)
		return t
	case zk.StateDisconnected, zk.StateConnecting, zk.StateConnected:
		// Connecting and Connected are TCP states: no session on them yet.
		// A connect request may follow, its grant untold until the answer
		// (Lease.untoldCap).
		if st.sessionID != 0 {
			s.lease.untoldLocked(zs)
		}
		if st.state != StateConnected {
			return transition{tcp: true, beforeFirst: st.sessionID == 0}
		}
		t := transition{moved: true, st: StateDisconnected}
		if !s.cfg.ExpiryOnly {
			t.lost, t.cause = st.holds.endAll(ErrDisconnected), ErrDisconnected
		}
		return t
	case zk.StateExpired:
		s.lease.reset()
		return transition{moved: true, st: StateExpired, lost: st.holds.endAll(ErrSessionExpired), cause: ErrSessionExpired}
	}
	return transition{}
}

// traceHandshake records, under Wrap (no tap reads the server's
// answer), the timeout the server granted to a session seen for the first
// time, which the replay derives the lease's bounds from. st.mu is held.
func (st *sessionState) traceHandshake(id int64) {
	if trace.Enabled && st.s.tap == nil && id != st.sessionID {
		zc := st.s.link.zc.Load()
		trace.ConnHandshook(zc, id, GrantedTimeout(zc))
	}
}

// setStateLocked records to and tells whoever waits on a change.
func (st *sessionState) setStateLocked(to int, id int64) {
	if to == st.state {
		return
	}
	st.state = to
	close(st.changed)
	st.changed = make(chan struct{})
	st.s.notes.push(to)
	st.s.log.Info("zookeeper session state", "state", StateName(to), "session", fmt.Sprintf("0x%x", id))
}

// markReady tells Dial that the first session is made (closes ready,
// once). observe calls it after the outage's end is told, not as it sets
// the state: Connect returns after the log says the session is
// established, so that nothing the program logs next comes before it.
func (st *sessionState) markReady() {
	st.mu.Lock()
	defer st.mu.Unlock()
	select {
	case <-st.ready:
	default:
		close(st.ready)
	}
}

// closeState moves the session to StateClosed and ends every hold.
func (st *sessionState) closeState() {
	st.mu.Lock()
	if st.state == StateClosed {
		st.mu.Unlock()
		return
	}
	lost := st.holds.endAll(ErrClosed)
	st.setStateLocked(StateClosed, st.sessionID)
	st.mu.Unlock()
	st.s.out.ends("the session was closed", 0, 0)
	for _, h := range lost {
		h.lose(ErrClosed)
	}
}

// changedChan returns a channel closed at the next state change.
func (st *sessionState) changedChan() <-chan struct{} {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.changed
}
