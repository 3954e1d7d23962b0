package session

import (
	"time"

	"github.com/tierlock/tierlock/internal/mutant"
)

// The lease's bounds (lease.go has the argument), each derived from what
// the servers granted the session and what the caller declared: the
// session timeout T, the reach R, the ping gap π and the renewer's period.

// reach is R: how long after a touch at the leader the floor vouches for
// its holds.
func (le *Lease) reach() time.Duration {
	t := le.Timeout()
	if mutant.On(mutant.ReachLong) {
		return t * 5 / 4 // seeded bug: past the expiry
	}
	if le.s.cfg.ExpiryOnly {
		return t + t/8
	}
	return t * 7 / 8
}

// gap is π: how long the leader may go without queueing a ping to the
// follower, tickTime/2 and an eighth of a tick of slack (the leader's
// loop waits half a tick, then pings every follower).
func (le *Lease) gap() time.Duration {
	if mutant.On(mutant.ChainNoGap) {
		return 0 // seeded bug: j and k need no ping between them
	}
	return le.tick() * 5 / 8
}

// period is how often the session must be proved while a lock has a node:
// D then stays at least T/4 ahead of the last proof (reach − gap − two
// periods, the chain's span), and never less often than T/8.
func (le *Lease) period() time.Duration {
	t := le.Timeout()
	return max(min(t/8, (le.reach()-t/4-le.gap())/2), t/32)
}

// deadlineLocked is D = t + R, t the latest touch at the leader shown and
// R reached by the least timeout granted in the session: computed at each
// look, so that a reconnection granted a shorter timeout brings D in at
// once (the leader's REVALIDATE re-armed the session's expiry with it).
// The zero time before any touch. st.mu is held.
func (le *Lease) deadlineLocked() time.Time {
	if le.touched.IsZero() {
		return time.Time{}
	}
	return le.touched.Add(le.reach())
}

// Timeout is the session timeout the lease's bounds derive from: the
// least the servers granted the session (from the connect answers under
// Dial, from the connection under Wrap), which may be more or less than
// the one asked for (a server clamps it to 2..20 of its ticks, and the
// members of an ensemble may be set apart: a rolling change), else, before
// a server answered, the one asked. The least, not the latest: every
// member that granted the session a timeout may still touch it with that
// one (a follower reports each touch with its connection's timeout, and
// the leader's expiry moves to the touch plus that timeout, earlier too).
func (le *Lease) Timeout() time.Duration {
	s := le.s
	least, most := le.grants()
	switch {
	case mutant.On(mutant.TimeoutAsked):
		return s.cfg.Timeout // seeded bug: the granted timeout ignored
	case mutant.On(mutant.TimeoutLarger):
		return max(least, s.cfg.Timeout) // seeded bug: the larger of the two
	case mutant.On(mutant.TimeoutKeptLonger):
		return most // seeded bug: the longest granted, which a later grant may have cut
	case least > 0:
		return least
	}
	return s.cfg.Timeout
}

// grants returns the least and the most session timeout the servers
// granted the current session (0: none yet).
func (le *Lease) grants() (least, most time.Duration) {
	s := le.s
	if s.tap == nil {
		return time.Duration(s.link.least.Load()), time.Duration(s.link.most.Load())
	}
	if h, ok := s.tap.LastHandshake(); ok {
		return h.Least, h.Most
	}
	return 0, 0
}

// tick is the server's tickTime as the lease takes it: the one declared
// (WithServerTickTime), else the most the negotiation allows, half the
// session timeout (see the argument), or less where a probe read the
// server's (tickprobe.go): the members of an ensemble share one tickTime,
// and each grants no session less than two of its ticks, so half the
// least timeout any of them granted bounds it. (A rolling change of
// tickTime itself needs WithServerTickTime, the largest of the old and the
// new.)
func (le *Lease) tick() time.Duration {
	if t := le.s.cfg.ServerTick; t > 0 {
		return t
	}
	t := le.Timeout() / 2
	if p := time.Duration(le.probed.Load()); p > 0 {
		t = min(t, p)
	}
	return t
}

// setTick takes the tick a probe read.
func (le *Lease) setTick(d time.Duration) { le.probed.Store(int64(d)) }
