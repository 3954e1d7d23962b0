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

// What a schedule does: its configuration, drawn from the seed
// (lease_config_test.go), and its steps, each at a time of its own (ns
// apart, so that two rarely fall together and a seed replays the same). A step is a token, kind@at or
// kind@at:d, so that a schedule is a list of them (lease_explore_test.go).

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
// Close (cl); and, drawn apart (draw), a drop whose next connection
// reaches the second member, its answer slow (rv), and a grant near the
// lease's deadline under WithLossOnExpiryOnly (nd: nearStep).
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
	// Drawn last, so that each seed's configuration and steps stay those
	// drawn before: the probe, and under WithLossOnExpiryOnly a
	// reconnection to the second member (drawn for it if none was), its
	// answer slow.
	c.probed = !c.declared && rng.IntN(4) != 0
	if c.expiryOnly && !c.healthy && rng.IntN(2) == 0 {
		if len(c.members) == 1 {
			c.members = append(c.members, c.otherMember(rng))
		}
		steps = append(steps, step{kind: "rv", at: uniform(rng, stepsUntil*T), d: uniform(rng, T)})
		slices.SortStableFunc(steps, func(a, b step) int { return int(a.at - b.at) })
	}
	// Drawn after them, for the same reason: under WithLossOnExpiryOnly,
	// in half the faulty schedules, an nd step, which puts a grant near
	// the lease's deadline (a drop, the next connection made so that the
	// leader's expiry of its touch falls just short of a tick boundary,
	// its answer slow, the stream down cut behind it until about that
	// expiry, an acquisition's create answered then: nearStep).
	if c.expiryOnly && !c.healthy && rng.IntN(2) == 0 {
		steps = append(steps, step{kind: "nd", at: uniform(rng, stepsUntil*T), d: T*5/12 + uniform(rng, T/6)})
		slices.SortStableFunc(steps, func(a, b step) int { return int(a.at - b.at) })
	}
	return c, steps
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
		a.m.Forget()
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
