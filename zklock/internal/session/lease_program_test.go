package session

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/writes"
)

// What a schedule does: its configuration, drawn from the seed, and its
// steps, each at a time of its own (ns apart, so that two rarely fall
// together and a seed replays the same). A step is a token, kind@at or
// kind@at:d, so that a schedule is a list of them (lease_explore_test.go).

// leaseConfig is a schedule's configuration.
type leaseConfig struct {
	asked       time.Duration // the session timeout the floor asks for
	T           time.Duration // the one the server grants (granted)
	tick        time.Duration // the servers' tickTime
	minSession  time.Duration // the servers' minSessionTimeout, when set below two ticks (0: not)
	declared    bool          // the floor is told the tick (Config.ServerTick)
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

func (c leaseConfig) gapOf(least time.Duration) time.Duration {
	tick := least / 2
	if c.declared {
		tick = c.tick
	}
	return tick * 5 / 8
}

// The horizon of a schedule's steps, and when it closes, in T.
const (
	stepsUntil = 6
	closeAt    = 8
)

// step is one thing the explorer does at its time.
type step struct {
	kind  string
	at, d time.Duration
}

func (s step) String() string {
	if s.d != 0 {
		return fmt.Sprintf("%s@%v:%v", s.kind, s.at, s.d)
	}
	return fmt.Sprintf("%s@%v", s.kind, s.at)
}

// parseSteps reads a schedule's steps back from their tokens.
func parseSteps(tokens []string) ([]step, error) {
	var steps []step
	for _, tok := range tokens {
		kind, rest, ok := strings.Cut(tok, "@")
		at, d, _ := strings.Cut(rest, ":")
		st := step{kind: kind}
		var err error
		if st.at, err = time.ParseDuration(at); !ok || err != nil {
			return nil, fmt.Errorf("bad step %q", tok)
		}
		if d != "" {
			if st.d, err = time.ParseDuration(d); err != nil {
				return nil, fmt.Errorf("bad step %q", tok)
			}
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// The steps a schedule draws from, with their weights: acquisitions (aq),
// releases (rl), ctx ends (x), transactions (tx), a busy spell of them
// (bz, one every T/64, so that chains are as short as writes make them);
// the faults: drops (dc), cuts between the follower and the leader (pt
// both ways, pl the way down, pf the way up), stalls (st), blackholes of
// the client's traffic (bh), steps of the wall clock (ws, either way),
// Close (cl).
var (
	programKinds = []string{"aq", "rl", "tx"}
	programW     = []int{5, 4, 3}
	faultKinds   = []string{"aq", "rl", "tx", "bz", "x", "dc", "pt", "pl", "pf", "st", "bh", "ws", "cl"}
	faultW       = []int{22, 16, 14, 4, 6, 9, 6, 4, 4, 8, 7, 3, 2}
)

// draw makes seed's configuration and steps.
func draw(seed uint64) (leaseConfig, []step) {
	rng := rand.New(rand.NewPCG(seed, 1))
	c := drawConfig(rng)
	T := c.T
	kinds, weights, n := faultKinds, faultW, 10+rng.IntN(31)
	if c.healthy {
		kinds, weights, n = programKinds, programW, 6+rng.IntN(15)
	}
	total := 0
	for _, x := range weights {
		total += x
	}
	steps := make([]step, n)
	for i := range steps {
		k := rng.IntN(total)
		j := 0
		for ; k >= weights[j]; j++ {
			k -= weights[j]
		}
		st := step{kind: kinds[j], at: uniform(rng, stepsUntil*T)}
		switch st.kind {
		case "dc":
			st.d = uniform(rng, 2*T)
		case "pt", "pl", "pf":
			st.d = uniform(rng, 3*T/2)
		case "st", "bh", "bz":
			st.d = uniform(rng, T)
		case "ws":
			st.d = uniform(rng, 2*T) - T
		}
		steps[i] = st
	}
	slices.SortStableFunc(steps, func(a, b step) int { return int(a.at - b.at) })
	return c, steps
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
// grants less than T, from the first's floor to 3T/4, or more, from above
// T. go-zookeeper asks each connection for the timeout the last one was
// granted, so a session's grants go down or up and stay there until the
// other member sets them apart again. Whole milliseconds, as a connect
// answer carries them.
func (c leaseConfig) otherMember(rng *rand.Rand) grantBounds {
	first := c.members[0]
	if room := c.T*3/4 - first.lo; room > time.Millisecond && rng.IntN(2) == 0 {
		return grantBounds{lo: first.lo, hi: first.lo + uniform(rng, room).Truncate(time.Millisecond)}
	}
	lo := c.T + time.Millisecond + uniform(rng, c.T).Truncate(time.Millisecond)
	return grantBounds{lo: lo, hi: max(first.hi, lo)}
}

// uniform draws a duration in [0, d].
func uniform(rng *rand.Rand, d time.Duration) time.Duration {
	return time.Duration(rng.Int64N(int64(d) + 1))
}

// The double's delays, drawn as the driver meets them.
func (w *world) jitter() time.Duration {
	if w.cfg.healthy || w.rng.IntN(10) < 6 {
		return 0
	}
	return uniform(w.rng, w.cfg.T/32)
}

func (w *world) hop() time.Duration {
	if w.cfg.healthy {
		return w.cfg.latency + uniform(w.rng, w.cfg.T/256)
	}
	if w.rng.IntN(100) < 85 {
		return w.cfg.latency + uniform(w.rng, w.cfg.T/128)
	}
	return w.cfg.latency + uniform(w.rng, w.cfg.T/8)
}

// late draws the leader's processing (up to T/2 when late) or an
// answer's way back (up to T).
func (w *world) late(upTo time.Duration) time.Duration {
	if w.cfg.healthy {
		return uniform(w.rng, w.cfg.T/256)
	}
	if w.rng.Float64() < w.cfg.pLate {
		w.cover(coverLate, true)
		return uniform(w.rng, upTo)
	}
	return uniform(w.rng, w.cfg.T/128)
}

func (w *world) proc() time.Duration { return w.late(w.cfg.T / 2) }
func (w *world) back() time.Duration { return w.cfg.latency + w.late(w.cfg.T) }

func (w *world) reconnectDelay() time.Duration {
	if w.rng.IntN(8) == 0 {
		return 0 // before a poll can see the drop
	}
	if w.rng.IntN(4) == 0 {
		return uniform(w.rng, 2*w.cfg.T)
	}
	return uniform(w.rng, w.cfg.T/4)
}

// member is an acquisition, as the lock floor makes one (zklock's
// Lock.attempt and Hold): Waiting(+1), the create of its node through the
// write path, Grant with the node's session, Waiting(-1); released, it
// leaves the valid holds (Forget) and its node is deleted; lost, the same.
type member struct {
	n      int
	path   string
	m      *Member
	ctx    context.Context
	cancel context.CancelFunc

	// Under world.mu.
	owner    int64
	node     string
	called   time.Duration // Grant called (-1: never)
	returned time.Duration // Grant returned (-1: not)
	err      error
	loses    []told
	forgot   time.Duration // released (-1: not)
	cancelAt time.Duration // its ctx ended (-1: not)
	exited   bool
	gaveUp   bool // its node given up (tidy)
}

// told is a lose call.
type told struct {
	at    time.Duration
	cause error
}

// granted reports whether Grant returned nil.
func (a *member) granted() bool { return a.returned >= 0 && a.err == nil }

// acquire is a member's goroutine.
func (w *world) acquire(a *member) {
	defer w.exit(a)
	s := w.s
	s.Waiting(1)
	defer s.Waiting(-1)
	if s.AwaitAuth(a.ctx) != nil {
		return // as zklock's locks: no lock request before the credential
	}
	if err := s.Flight().Admit(a.ctx, 1); err != nil {
		return
	}
	wr := s.Writes().Create(a.path, fmt.Sprintf("%s/_c_%08d-lock-", a.path, a.n), nil, zk.WorldACL(zk.PermAll))
	<-wr.Done
	res := wr.Result()
	if res.Verdict != writes.Applied || res.Session == 0 {
		return
	}
	w.mu.Lock()
	a.owner, a.node, a.called = res.Session, res.Results[0].String, w.now()
	w.mu.Unlock()
	err := s.Grant(a.ctx, res.Session, a.m)
	w.mu.Lock()
	a.returned, a.err = w.now(), err
	w.mu.Unlock()
}

// lose is a member's Member callback.
func (w *world) lose(a *member, cause error) {
	w.mu.Lock()
	a.loses = append(a.loses, told{at: w.now(), cause: cause})
	w.mu.Unlock()
	w.poke()
}

// tidy gives up, at the instant they end, the nodes of the acquisitions
// whose Grant failed or whose hold was lost, as zklock's Lock.attempt and
// Hold.giveUp do (Forget, and the node's delete through the write path):
// from the driver, in the members' order, rather than from the goroutines
// that saw the end, whose order at one instant is the Go scheduler's (the
// floor ends holds in its map's order), so that a seed replays the same.
func (w *world) tidy() bool {
	w.mu.Lock()
	var ended []*member
	for _, a := range w.members {
		if !a.gaveUp && a.node != "" && (len(a.loses) > 0 || a.returned >= 0 && a.err != nil) {
			a.gaveUp = true
			ended = append(ended, a)
		}
	}
	w.mu.Unlock()
	for _, a := range ended {
		w.s.Forget(a.m)
		w.s.Writes().Delete(a.path, a.node, a.owner, nil)
	}
	return len(ended) > 0
}

// exit ends an explorer goroutine (a nil member: a transaction's).
func (w *world) exit(a *member) {
	w.mu.Lock()
	w.live--
	if a != nil {
		a.exited = true
	}
	w.mu.Unlock()
	w.poke()
}

// txn is a transaction's goroutine: a setData through the write path.
func (w *world) txn(n int) {
	defer w.exit(nil)
	wr := w.s.Writes().Txn([]any{&zk.SetDataRequest{Path: "/data", Data: []byte{byte(n)}, Version: -1}})
	<-wr.Done
	w.cover(coverTxnProof, wr.Result().Verdict == writes.Applied)
}
