package lockmetrics

import (
	"sync"

	"github.com/tierlock/tierlock/zklock"
)

// stallConnections are the values of the connection label of
// stalled_locks and stalls_total: what the servers said of the stalling
// session's connection.
var stallConnections = [...]string{"none", "unknown"}

// stallConnection is st's connection label.
func stallConnection(st zklock.Stall) string {
	if st.Disconnected {
		return "none"
	}
	return "unknown"
}

// StallHandler returns a handler for zklock.WithStallHandler, one per
// session: a stall's beginning counts in stalls_total and adds its locks
// to stalled_locks, and its end takes them away. A session's waits that
// stand behind a killed process's nodes show here until that process's
// session expires.
func (c *Collector) StallHandler() func(zklock.Stall) {
	if c == nil {
		return func(zklock.Stall) {}
	}
	var (
		mu     sync.Mutex
		counts = map[int64]int{} // the locks each stall added, by session
	)
	return func(st zklock.Stall) {
		mu.Lock()
		defer mu.Unlock()
		conn := stallConnection(st)
		if st.Ended {
			if n, ok := counts[st.Session]; ok {
				delete(counts, st.Session)
				c.stalled.WithLabelValues(conn).Sub(float64(n))
			}
			return
		}
		if _, ok := counts[st.Session]; ok {
			return // told once per stall
		}
		counts[st.Session] = len(st.Locks)
		c.stalls.WithLabelValues(conn).Inc()
		c.stalled.WithLabelValues(conn).Add(float64(len(st.Locks)))
	}
}
