package lockmetrics

import (
	"sync"

	"github.com/tierlock/tierlock/zklock"
)

// sessionStates are the states session_state shows. Closed is not among
// them: a closed session is gone, and a process that opens many over its
// life would count them forever.
var sessionStates = [...]zklock.State{zklock.StateConnecting, zklock.StateConnected,
	zklock.StateDisconnected, zklock.StateExpired}

// initSessions makes the session series at zero, so that a dashboard sees
// every state from the first scrape.
func (c *Collector) initSessions() {
	for _, st := range sessionStates {
		c.sessions.WithLabelValues(st.String())
		c.transitions.WithLabelValues(st.String())
	}
	c.transitions.WithLabelValues(zklock.StateClosed.String())
}

// SessionListener returns a listener for zklock.WithStateListener, one per
// session: it moves the session's count in session_state from its last
// state to the new one (a closed session leaves the gauge) and counts the
// change in session_transitions_total. zklock calls it in order, from one
// goroutine; the mutex only guards against a listener shared by mistake
// between sessions, whose counts would then be wrong but never negative.
func (c *Collector) SessionListener() func(zklock.State) {
	if c == nil {
		return func(zklock.State) {}
	}
	var (
		mu   sync.Mutex
		last = "" // "" until the first state, and after closed
	)
	return func(st zklock.State) {
		mu.Lock()
		defer mu.Unlock()
		c.transitions.WithLabelValues(st.String()).Inc()
		if last != "" {
			c.sessions.WithLabelValues(last).Dec()
			last = ""
		}
		if st != zklock.StateClosed {
			last = st.String()
			c.sessions.WithLabelValues(last).Inc()
		}
	}
}
