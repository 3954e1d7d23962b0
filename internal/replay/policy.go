package replay

import (
	"github.com/tierlock/tierlock/internal/trace"
)

// The loss policy of a session. twotier.pml has one: a disconnection, a
// lapse of the lease or a new session ends every hold (disconnect(q):
// "losehold(q)"), and a grant needs the connection ("conn[p] && lease[p]
// && ..."). zklock.WithLossOnExpiryOnly keeps holds through
// disconnections: they end at the lapse of a longer lease (a reach R =
// 9T/8, not 7T/8), when the session is found expired, or when a new
// session replaces it; and a grant may be made while disconnected, under
// the lease (zklock/hold.go's grantableLocked, lease.go's bound). That
// policy is outside the model. The replay renders it anyway, as the
// model's transitions with those two changed (event and verdict below),
// because everything else still holds and is still checked: the lease
// counts from a touch a handshake or a chain shows at the leader, with R =
// 9T/8 (bounds.go), a hold ends at its deadline, a loss is told only after
// a lapse, an expiry or a new session and every hold so ended is told, in
// time (timing.go), the delete queue's rule, and across processes the
// fencing tokens and the order of creation.
//
// Mutual exclusion holds only up to the policy's documented bound: the
// leader may expire the session T after the touch the lease counts from,
// while the holder's lease runs to 9T/8, so another process may be granted
// up to T/8 before the holder's deadline (lease.go's argument; T the
// timeout the server granted). A grant that close is counted
// (Result.Overlaps), one earlier refused; the fencing token is what
// protects such a hold.
//
// A session's policy is its session step (trace.SessionOpen), recorded
// before any other of its connection's steps; a trace without one (older
// recordings) is of the default policy.

// open applies a session step: the policy of the session made on this
// connection. Two sessions on one connection (NewSession twice) share
// a process here: if either is expiry-only, the weaker rendering applies
// to both, and it is counted as such.
func (s *session) open(st trace.Step) error {
	if st.Note == trace.PolicyExpiryOnly && !s.expiryOnly {
		s.expiryOnly = true
		s.c.res.ExpiryOnly++
	}
	// The servers' tick the session was told, for the lease's gap
	// (bounds.go): of two sessions on one connection, the larger gap.
	if st.Tick > 0 {
		s.tick = max(s.tick, st.Tick)
	} else {
		s.untold = true
	}
	return nil
}

// endsHolds reports whether a session event ends the session's holds:
// StateExpired always; StateDisconnected only under the default policy.
func (s *session) endsHolds(expired bool) bool { return expired || !s.expiryOnly }

// mayGrantDown reports whether a grant may be made while disconnected:
// only under the expiry-only policy (grantableLocked: "s.cfg.expiryOnly &&
// s.st.state == StateDisconnected").
func (s *session) mayGrantDown() bool { return s.expiryOnly }

// slack is how long before the end of a hold of this session's another
// process may be granted: T/8 under the expiry-only policy (9T/8 - T, T
// the timeout the server granted), none under the model's.
func (s *session) slack() int64 {
	if !s.expiryOnly {
		return 0
	}
	return s.timeout / 8
}
