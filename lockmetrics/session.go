package lockmetrics

import (
	"sync"

	"github.com/tierlock/tierlock/zklock"
)

// sessionStates are the states session_state and session_transitions_total
// show: every state a zklock.Session moves through. A closed session stays
// counted under closed (it is a state its process is in: with one session,
// 1 once it is closed), so the closed count grows by one per session a
// process closes; its value grows, its series do not.
var sessionStates = [...]zklock.State{zklock.StateConnecting, zklock.StateConnected,
	zklock.StateDisconnected, zklock.StateExpired, zklock.StateClosed}

// initSessions makes the session series at zero, so that a dashboard sees
// every state from the first scrape.
func (c *Collector) initSessions() {
	for _, st := range sessionStates {
		c.sessions.WithLabelValues(st.String())
		c.transitions.WithLabelValues(st.String())
	}
}

// SessionListener returns a listener for zklock.WithStateListener, one per
// session: it moves the session's count in session_state from its last
// state to the new one, closed included (where it stays: a closed session
// does not come back), and counts the change in session_transitions_total.
// zklock calls it in order, from one goroutine; the mutex only guards
// against a listener shared by mistake between sessions, whose counts
// would then be wrong but never negative.
func (c *Collector) SessionListener() func(zklock.State) {
	if c == nil {
		return func(zklock.State) {}
	}
	var (
		mu   sync.Mutex
		last = "" // "" until the first state
	)
	return func(st zklock.State) {
		mu.Lock()
		defer mu.Unlock()
		name := st.String()
		c.transitions.WithLabelValues(name).Inc()
		if last == name {
			return
		}
		if last != "" {
			c.sessions.WithLabelValues(last).Dec()
		}
		last = name
		c.sessions.WithLabelValues(name).Inc()
	}
}
