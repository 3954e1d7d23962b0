package session

import (
	"math/rand/v2"
	"time"
)

// A schedule's configuration: what the floor is made with, what the
// servers grant, and how the double behaves, drawn from the seed
// (drawConfig), and what the lease's rule makes of it (reach, gapOf,
// leastGrantable).

// leaseConfig is a schedule's configuration.
type leaseConfig struct {
	asked       time.Duration // the session timeout the floor asks for
	T           time.Duration // the one the server grants (granted)
	tick        time.Duration // the servers' tickTime
	minSession  time.Duration // the servers' minSessionTimeout, when set below two ticks (0: not)
	declared    bool          // the floor is told the tick (Config.ServerTick)
	probed      bool          // else the probe read the first member's least grant (tickprobe.go); else the tick is unknown
	phase       time.Duration // when the leader's first ping goes, within tick/2
	orphanAfter time.Duration // syncLimit × tickTime
	expiryOnly  bool          // Config.ExpiryOnly
	wrap        bool          // the floor is made by Wrap: no tap, its state polled
	events      bool          // under Wrap, an event channel (else none)
	healthy     bool          // no faults, every answer within a 1/256 of T
	pLate       float64       // the share of late answers (and late processing)
	slowPings   bool          // the leader pings up to a tick late (the argument's assumption dropped)
	latency     time.Duration // a fixed delay each way between the client and the follower, a proxy's (0 in drawn schedules)

	members      []grantBounds // the members a connection may reach; none: one, the servers' defaults (firstMember)
	expiryPhase  time.Duration // where the leader's tick boundaries fall, within a tick: its expiries are rounded up to them
	digests      bool          // the floor has a credential: an auth goes out after the first session and on each connection after
	noPipelining bool          // Config.NoPipelining (under Dial): a write's proof is dated by the first write after its queueing
}

// grantBounds is what one member of the ensemble grants a session: the
// timeout asked, within its minSessionTimeout and maxSessionTimeout.
type grantBounds struct{ lo, hi time.Duration }

func (b grantBounds) grant(asked time.Duration) time.Duration { return min(max(asked, b.lo), b.hi) }

// firstMember is the servers' negotiation as ZooKeeper's defaults have
// it: between 2 and 20 ticks (from minSession up, when set).
func (c leaseConfig) firstMember() grantBounds {
	lo := 2 * c.tick
	if c.minSession > 0 {
		lo = c.minSession
	}
	return grantBounds{lo: lo, hi: 20 * c.tick}
}

// member is the bounds of the member that connection n reaches: the
// first connection the first member (T is what it grants), each later one
// either member, drawn.
func (w *world) member(n int) grantBounds {
	ms := w.cfg.members
	if len(ms) == 0 {
		return w.cfg.firstMember()
	}
	if n > 1 && len(ms) > 1 && w.rng.IntN(2) == 0 {
		return ms[1]
	}
	return ms[0]
}

// reach is the lease's R, and gapOf its π, for the least timeout granted
// the session, as lease.go states them: T the least granted, the tick
// half of it unless the floor is told the tick.
func (c leaseConfig) reach(least time.Duration) time.Duration {
	if c.expiryOnly {
		return least + least/8
	}
	return least * 7 / 8
}

// leastGrantable is the least timeout a member can grant as the floor
// knows it (Lease.leastGrantable): the probe's read of the first member,
// two declared ticks, or none.
func (c leaseConfig) leastGrantable() time.Duration {
	switch {
	case c.probed:
		return c.members[0].lo
	case c.declared:
		return 2 * c.tick
	}
	return 0
}

func (c leaseConfig) gapOf(least time.Duration) time.Duration {
	tick := least / 2
	switch {
	case c.declared:
		tick = c.tick
	case c.probed:
		tick = min(tick, c.members[0].lo/2)
	}
	return tick * 5 / 8
}

// drawConfig draws a schedule's configuration: the timeout asked for; the
// servers' tick, most often such that they grant it, else more (less than
// two ticks asked) or less (more than twenty); now and then a server whose
// minSessionTimeout lets it grant less than two ticks, the tick then told
// to the floor, as the argument needs (lease.go); 1 in 4 faulty schedules
// a second member whose bounds are set apart (otherMember); the floor's
// policy, make and options; how the double behaves.
func drawConfig(rng *rand.Rand) leaseConfig {
	asked := []time.Duration{2 * time.Second, 4 * time.Second, 10 * time.Second}[rng.IntN(3)]
	c := leaseConfig{asked: asked, expiryOnly: rng.IntN(4) == 0, healthy: rng.IntN(8) == 0,
		pLate: []float64{0, 0.1, 0.3}[rng.IntN(3)], declared: rng.IntN(3) == 0,
		wrap: rng.IntN(4) == 0, events: rng.IntN(2) == 0, slowPings: *leaseSlowPings}
	switch k := rng.IntN(16); {
	case k < 2: // granted more than asked
		c.tick = asked/2 + uniform(rng, asked/2)
	case k < 4: // granted less
		c.tick = asked/40 + uniform(rng, asked/20-asked/40)
	case k < 5: // a minSessionTimeout under two ticks
		c.tick = asked/2 + uniform(rng, asked)
		c.minSession, c.declared = asked/2, true
	default:
		c.tick = asked/20 + uniform(rng, asked/2-asked/20)
	}
	c.tick = max(c.tick.Round(time.Millisecond), time.Millisecond)
	c.members = []grantBounds{c.firstMember()}
	c.T = c.members[0].grant(asked)
	c.phase = uniform(rng, c.tick/2)
	c.orphanAfter = min(time.Duration(2+rng.IntN(19))*c.tick, 2*c.T)
	c.expiryPhase = uniform(rng, c.tick-1)
	c.digests = rng.IntN(3) == 0
	c.noPipelining = !c.wrap && rng.IntN(4) == 0
	if !c.healthy && rng.IntN(4) == 0 {
		c.members = append(c.members, c.otherMember(rng))
	}
	return c
}

// otherMember draws a second member's bounds, set apart from the first's
// (a rolling change of maxSessionTimeout or minSessionTimeout): one that
// grants less than T, from two ticks (or the first's floor, if higher) to
// 3T/4, or more, from above T. go-zookeeper asks each connection for the timeout the last one was
// granted, so a session's grants go down or up and stay there until the
// other member sets them apart again. Whole milliseconds, as a connect
// answer carries them.
func (c leaseConfig) otherMember(rng *rand.Rand) grantBounds {
	first := c.members[0]
	floor := max(first.lo, 2*c.tick) // two ticks: a minSessionTimeout below that is lease.go's exception, the first member's
	if room := c.T*3/4 - floor; room > time.Millisecond && rng.IntN(2) == 0 {
		return grantBounds{lo: floor, hi: floor + uniform(rng, room).Truncate(time.Millisecond)}
	}
	lo := c.T + time.Millisecond + uniform(rng, c.T).Truncate(time.Millisecond)
	return grantBounds{lo: lo, hi: max(first.hi, lo)}
}
