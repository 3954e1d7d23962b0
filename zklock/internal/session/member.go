package session

import "sync/atomic"

// The holds: a Member is one hold as the floor knows it, and a holdSet the
// floor's valid holds. What is asked of a hold that judges the lease
// (Vouch, Leave) is in grant.go, beside Grant; what ends them all, in
// state.go (the connection's states) and lapse.go (the lease's lapse).

// Member is a hold as the floor knows it: one of its valid holds from
// Grant to Forget, told Lose when the floor can no longer vouch for it (a
// disconnection, an expiry or a new session, the lease's lapse, Close).
// The questions asked of a hold are asked of it (Vouch, Leave, Forget).
type Member struct {
	lose       func(cause error) // must not block: it may run on go-zookeeper's event goroutine
	path, node string            // the hold's lock and node, for the release's trace step (Leave)
	s          *Floor            // the floor asked to grant it (Grant); nil before
	ended      error             // the cause the floor ended it with (holdSet.endAll), under st.mu
	out        atomic.Bool       // ended is set: read without st.mu (Vouch)
}

// NewMember is the member of the hold of node, on the lock at path, that
// lose ends.
func NewMember(path, node string, lose func(cause error)) *Member {
	return &Member{lose: lose, path: path, node: node}
}

// Forget takes m out of the valid holds (released, or lost by its own
// watch); nil, a member never granted, or one taken already, is no matter.
func (m *Member) Forget() {
	if m == nil || m.s == nil {
		return
	}
	st := &m.s.st
	st.mu.Lock()
	delete(st.holds, m)
	st.mu.Unlock()
}

// holdSet is the floor's valid holds (sessionState.holds, under st.mu).
type holdSet map[*Member]struct{}

// endAll empties the set of valid holds, ended with cause, and returns them.
// st.mu is held.
func (hs holdSet) endAll(cause error) []*Member {
	if len(hs) == 0 {
		return nil
	}
	taken := make([]*Member, 0, len(hs))
	for h := range hs {
		h.ended = cause
		h.out.Store(true)
		taken = append(taken, h)
	}
	clear(hs)
	return taken
}
