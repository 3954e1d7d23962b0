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
// While a reconnection's grant is untold, D is at most untoldCap. The zero
// time before any touch. st.mu is held.
func (le *Lease) deadlineLocked() time.Time {
	if le.touched.IsZero() {
		return time.Time{}
	}
	d := le.touched.Add(le.reach())
	if c, ok := le.untoldCap(); ok && c.Before(d) {
		return c
	}
	return d
}

// untoldCap bounds the deadline while a reconnection's grant is untold
// (under WithLossOnExpiryOnly: holds ride a reconnection only under that
// policy): 9/8 of the least timeout a member can grant past untoldSince
// (no later than the write of the first connect request not answered
// since), or untoldSince itself where the floor does not know that least. The member a connection
// reaches may grant less than any before it (a rolling change of
// maxSessionTimeout), and its REVALIDATE re-arms the leader's expiry with
// what it grants at or after the request's write, before the answer can
// tell the client: the explorer's double showed a hold 792 ms past the
// leader's expiry, T 1.98 s cut to 208 ms, the answer given up at 2T/3
// (the seeded bug untold-grant-ignored). ok is false when no grant is
// untold. st.mu is held.
func (le *Lease) untoldCap() (time.Time, bool) {
	if le.untoldSince.IsZero() || mutant.On(mutant.UntoldGrantIgnored) { // seeded bug: the grant on its way ignored
		return time.Time{}, false
	}
	least := le.leastGrantable()
	return le.untoldSince.Add(least + least/8), true
}

// untoldWhy says, where the bound of an untold grant (untoldCap) is what
// the deadline is, why, for the lapse's line; "" where it is not. st.mu
// is held.
func (le *Lease) untoldWhy() string {
	c, ok := le.untoldCap()
	switch {
	case !ok || !c.Before(le.touched.Add(le.reach())):
		return ""
	case le.leastGrantable() == 0:
		return " (a reconnection began, and the least session timeout a member may grant it is not known: declare the servers' tick, WithServerTickTime)"
	}
	return " (a reconnection's connect answer, which may grant a shorter session timeout, has not come)"
}

// leastGrantable is the least session timeout a member of the ensemble can
// grant, as the floor knows it: the least granted to the probe's session
// (tickprobe.go: the server's minSessionTimeout), else two declared ticks
// (the servers' default minSessionTimeout); 0 when it knows neither. It
// assumes the members share their minSessionTimeout, as they share their
// tick (lease.go).
func (le *Lease) leastGrantable() time.Duration {
	if p := time.Duration(le.tickProbed.Load()); p > 0 {
		return 2 * p
	}
	return 2 * le.s.cfg.ServerTick
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
	if p := time.Duration(le.tickProbed.Load()); p > 0 {
		t = min(t, p)
	}
	return t
}

// setTick takes the tick a probe read.
func (le *Lease) setTick(d time.Duration) { le.tickProbed.Store(int64(d)) }

// validLocked reports whether holds stand at now: the deadline is ahead.
// st.mu is held.
func (le *Lease) validLocked(now time.Time) bool { return now.Before(le.deadlineLocked()) }

// grantableLocked reports whether a hold may be granted at now: the
// deadline is at least T/16 ahead, so that a hold is not granted to lapse
// a moment later (a renewal is a round trip or two away). Under
// WithLossOnExpiryOnly the deadline reaches past the leader's expiry by
// up to T/8, for holds to ride out short failures; a new hold is granted
// only within the default's reach, 7T/8, which ends before it. st.mu is
// held.
func (le *Lease) grantableLocked(now time.Time) bool {
	t := le.Timeout()
	if mutant.On(mutant.GrantWholeReach) {
		return le.validLocked(now.Add(t / 16)) // seeded bug: granted on the whole reach
	}
	if mutant.On(mutant.GrantNoMargin) {
		return le.validLocked(now.Add(le.reach() - t*7/8)) // seeded bug: no margin
	}
	return le.validLocked(now.Add(t/16 + le.reach() - t*7/8))
}
