package zkserver

import "time"

// The session timeouts the servers grant: the ensemble's bounds, and a
// member's set apart from them.

// WithSessionTimeouts sets the bounds the server applies to the session
// timeout that clients ask for (default: 2 ticks and
// [DefaultMaxSessionTimeout], or 20 ticks if that is longer).
func WithSessionTimeouts(min, max time.Duration) Option {
	return func(c *config) { c.minSession, c.maxSession = min, max }
}

// WithMemberMaxSessionTimeout sets member i's maxSessionTimeout apart
// from the others' (WithSessionTimeouts): an ensemble mid-way through a
// rolling change of the setting, whose members grant one session
// different timeouts at each reconnection.
func WithMemberMaxSessionTimeout(i int, max time.Duration) Option {
	return func(c *config) {
		if c.memberMax == nil {
			c.memberMax = make(map[int]time.Duration)
		}
		c.memberMax[i] = max
	}
}

// sessionBounds are the session timeouts the servers grant: what
// WithSessionTimeouts set, else 2 ticks to DefaultMaxSessionTimeout (at
// least 20 ticks, ZooKeeper's own upper bound).
func (c *Cluster) sessionBounds() (lo, hi time.Duration) {
	lo, hi = c.cfg.minSession, c.cfg.maxSession
	if lo <= 0 {
		lo = 2 * c.cfg.tickTime
	}
	if hi <= 0 {
		hi = max(DefaultMaxSessionTimeout, 20*c.cfg.tickTime)
	}
	return lo, max(lo, hi)
}
