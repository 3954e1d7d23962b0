package replay

import (
	"strings"
	"testing"

	"github.com/tierlock/tierlock/internal/trace"
)

// Hand-made traces of the bounds the replay derives from the server's
// answers and the wire (bounds.go) and of the model's timing (timing.go):
// each is refused at its one wrong step, and the same trace put right
// replays clean. The hand-made server grants T = 4000 units: the lease's
// reach R is 3500 under the default policy (7T/8), 4500 under the
// expiry-only one (9T/8); the gap π is 250 with the servers' tick told as
// 400 units, 1250 (5/8 of T/2) untold; and the code may take tol = T/16 =
// 250 units for a step the model takes with another.

// wait moves the next step's time d units on.
func (b *tr) wait(d int64) *tr {
	b.n += int(d / 10)
	return b
}

// write adds a write on the connection, begun 1 unit before it is
// recorded.
func (b *tr) write() *tr {
	b.add(trace.Step{Kind: trace.Write, N: 9})
	b.steps[len(b.steps)-1].At = b.steps[len(b.steps)-1].T - 1
	return b
}

// at is the At of the last step.
func (b *tr) at() int64 { return b.steps[len(b.steps)-1].At }

// touch adds the tap's touch of the packet written at w, its reply read 1
// unit before the step.
func (b *tr) touch(w int64) *tr {
	b.add(trace.Step{Kind: trace.Touch, At: w})
	b.steps[len(b.steps)-1].Until = b.steps[len(b.steps)-1].T - 1
	return b
}

// sync adds a sync sent and answered (tapped: written after its send, its
// reply's touch confirmed before its answer) and returns the time of its
// send.
func (b *tr) sync() (sent int64) {
	b.add(trace.Step{Kind: trace.Send, Op: trace.OpSync, Path: "/"})
	sent = b.steps[len(b.steps)-1].T
	if !b.untapped {
		b.write().touch(b.at())
	}
	b.add(trace.Step{Kind: trace.Answer, Op: trace.OpSync, Path: "/"})
	return sent
}

// refusedFor replays b and checks that it is refused at a step of kind for
// a rule containing rule, or, with kind 0, that it replays clean.
func refusedFor(t *testing.T, name string, b *tr, kind trace.Kind, rule string) Result {
	t.Helper()
	r := replayed(t, name, b.jsonl(t))
	v := r.First()
	switch {
	case kind == 0 && v != nil:
		t.Errorf("%s: refused %v, want clean", name, v)
	case kind != 0 && (v == nil || v.Step.Kind != kind || !strings.Contains(v.Rule, rule)):
		t.Errorf("%s: refused %v, want a %s step refused for %q", name, v, kind, rule)
	case v != nil:
		t.Logf("%s: refused: %v", name, v)
	}
	return r
}

// The lease reaches R past its touch, from the T the server granted, not
// what the code's renews say: a renew from the session's handshake to
// 3600 units past it is refused, to R or less clean; so is one counted
// with the timeout the session asked for (8000: 7000 past), and under the
// expiry-only policy one past 9T/8.
func TestHandMadeReachFromServer(t *testing.T) {
	for _, c := range []struct {
		name   string
		expiry bool
		d      int64
		kind   trace.Kind
	}{
		{"past R", false, 3600, trace.Renew}, {"R", false, 3500, 0}, {"within R", false, 1000, 0},
		{"the asked timeout", false, 8000 * 7 / 8, trace.Renew},
		{"expiry-only past R", true, 4600, trace.Renew}, {"expiry-only R", true, 4500, 0},
	} {
		b := opened(7, trace.PolicyDefault)
		if c.expiry {
			b = opened(7, trace.PolicyExpiryOnly)
		}
		b.sync()
		b.renew(b.steps[0].At + c.d)
		refusedFor(t, c.name, b, c.kind, "past the touch it counts from")
	}
	// With no answer of the server's recorded, no bound can be derived.
	b := newTr(7)
	b.sync()
	b.renew(1000)
	b.steps = b.steps[1:] // the handshake
	refusedFor(t, "no handshake", b, trace.Renew, "cannot be derived")
}

// A renew counts from a touch a handshake or a chain shows at the
// leader: one from after the session's connect request, with no chain,
// is refused (the touch dated by its reply's arrival, say); under
// NewSession the handshake is not read at the wire and shows nothing.
func TestHandMadeTouchShown(t *testing.T) {
	b := newTr(7)
	b.sync()
	hs := b.steps[0].At
	refusedFor(t, "from the handshake", b.renew(hs+1000), 0, "")
	b = newTr(7)
	sent := b.sync()
	b.add(trace.Step{Kind: trace.Renew, Owner: 7, At: sent, Until: sent + 1000})
	refusedFor(t, "from a proof's own send", b, trace.Renew, "which no handshake nor chain shows")
	b = newTr(7)
	b.untapped = true
	b.sync()
	b.add(trace.Step{Kind: trace.Renew, Owner: 7, At: 0, Until: 1000})
	refusedFor(t, "from a handshake under NewSession", b, trace.Renew, "no answer to a connect request read at the wire")
}

// chain is a session told a tick of 400 units (π = 250; untold: 1250) whose
// renew counts from j, a ping touched (untapped: a sync of the floor's),
// then, gap units later, k, a sync, and l, a sync handed over after k's
// answer (lFirst: before it); from j's write time (fromSeen: from when its
// reply was read), to R past it.
func chain(untapped, untold bool, gap int64, lFirst, fromSeen bool) *tr {
	b := newTr(7)
	b.untapped = untapped
	tick := int64(400)
	if untold {
		tick = 0
	}
	b.add(trace.Step{Kind: trace.SessionOpen, Note: trace.PolicyDefault, Tick: tick})
	var j, seen int64
	if untapped {
		j = b.sync()
		seen = b.steps[len(b.steps)-1].T
	} else {
		j = b.write().at()
		b.touch(j)
		seen = b.steps[len(b.steps)-1].Until
	}
	b.wait(gap)
	send := func() *tr {
		b.add(trace.Step{Kind: trace.Send, Op: trace.OpSync, Path: "/"})
		if !untapped {
			b.write()
		}
		return b
	}
	answer := func(w int64) *tr {
		if !untapped {
			b.touch(w)
		}
		return b.add(trace.Step{Kind: trace.Answer, Op: trace.OpSync, Path: "/"})
	}
	send()
	wk := b.at()
	if lFirst {
		send()
		wl := b.at()
		answer(wk)
		answer(wl)
	} else {
		answer(wk)
		send()
		answer(b.at())
	}
	if fromSeen {
		j = seen
	}
	return b.add(trace.Step{Kind: trace.Renew, Owner: 7, At: j, Until: j + 3500})
}

// A chain shows its j at the leader: k written π after j's reply was
// read, l handed over after k's answer. Each part wrong is refused: k
// written too soon after j (no gap: the leader may not have pinged the
// follower between them), or with the tick untold (π from T/2); l handed
// over before k's answer (a proof closing its own chain); the touch dated
// by its reply's arrival instead of its write. Under NewSession, j, k and
// l are the floor's own syncs.
func TestHandMadeChain(t *testing.T) {
	for _, c := range []struct {
		name                               string
		untapped, untold, lFirst, fromSeen bool
		gap                                int64
		kind                               trace.Kind
		rule                               string
	}{
		{name: "chain", gap: 300},
		{name: "no gap", gap: 150, kind: trace.Renew, rule: "confirmed only after w_k − π"},
		{name: "tick untold", untold: true, gap: 300, kind: trace.Renew, rule: "π = 1.25µs"},
		{name: "tick untold, gap", untold: true, gap: 1300},
		{name: "l before k's answer", gap: 300, lFirst: true, kind: trace.Renew, rule: "no chain"},
		{name: "from the reply", gap: 300, fromSeen: true, kind: trace.Renew, rule: "which no handshake nor chain shows"},
		{name: "NewSession", untapped: true, gap: 300},
		{name: "NewSession, no gap", untapped: true, gap: 150, kind: trace.Renew, rule: "confirmed only after w_k − π"},
		// j, the first sync, is the only k answered before l's hand-over
		{name: "NewSession, l before k's answer", untapped: true, gap: 300, lFirst: true, kind: trace.Renew,
			rule: "the latest chain's k was written at 20ns"},
		{name: "NewSession, from the answer", untapped: true, gap: 300, fromSeen: true, kind: trace.Renew,
			rule: "which no handshake nor chain shows"},
	} {
		refusedFor(t, c.name, chain(c.untapped, c.untold, c.gap, c.lFirst, c.fromSeen), c.kind, c.rule)
	}
}

// ownWrite is chain's trace with k's own write, which tells the tap's
// waiter of key "/", 200 units after another request's write that follows
// k's send (a backlog): k dated by its own write (keyed) shows j at the
// leader; dated by the other one, k would be written too soon after j.
func ownWrite(keyed bool) *tr {
	b := newTr(7)
	b.add(trace.Step{Kind: trace.SessionOpen, Note: trace.PolicyDefault, Tick: 400})
	j := b.write().at()
	b.touch(j)
	b.wait(100)
	b.add(trace.Step{Kind: trace.Send, Op: trace.OpSync, Path: "/"})
	b.write() // another request's, queued before k
	b.wait(200)
	b.write()
	if keyed {
		b.steps[len(b.steps)-1].Path = "/"
	}
	wk := b.at()
	b.touch(wk).add(trace.Step{Kind: trace.Answer, Op: trace.OpSync, Path: "/"})
	b.add(trace.Step{Kind: trace.Send, Op: trace.OpSync, Path: "/"})
	b.write()
	b.steps[len(b.steps)-1].Path = "/"
	b.touch(b.at()).add(trace.Step{Kind: trace.Answer, Op: trace.OpSync, Path: "/"})
	return b.add(trace.Step{Kind: trace.Renew, Owner: 7, At: j, Until: j + 3500})
}

// A proof is dated by its own write where the tap's waiter saw it (the
// write step names the waiter's key), as the code dates it
// (Lease.writtenAt): a sync queued behind a backlog shows its chain's j.
// Without the key the replay dates it as the code does a proof with no
// waiter, by the first write after its send, and refuses the same renew.
func TestHandMadeProofOwnWrite(t *testing.T) {
	refusedFor(t, "own write", ownWrite(true), 0, "")
	refusedFor(t, "first write after the send", ownWrite(false), trace.Renew, "confirmed only after w_k − π")
}

// holding is a trace of one hold of session 7 on lockA, its lease to 1060.
func holding() *tr { return newTr(7).acquire(lockA, pfxA, nodeA, 20) }

// A loss follows the step that ended its hold by at most tol.
func TestHandMadeLossOnTime(t *testing.T) {
	for _, c := range []struct {
		d    int64
		kind trace.Kind
	}{{300, trace.Lose}, {100, 0}} {
		b := holding().add(trace.Step{Kind: trace.Event, Note: "EventSession StateDisconnected"}).wait(c.d - 10).
			add(trace.Step{Kind: trace.Lose, Node: nodeA, Out: "conn", Note: "disconnected"})
		refusedFor(t, "loss", b, c.kind, "told lost after the event")
	}
}

// While a hold is valid the lapse comes by the deadline + tol, and no
// step of the process later than that; a stop of the process, recorded
// by whoever stopped it, excuses it.
func TestHandMadeLapseOnTime(t *testing.T) {
	lapse := func(at int64) *tr { // the lease ends at 1060
		b := holding()
		b.wait(at - int64(b.n+1)*10)
		return b.add(trace.Step{Kind: trace.Lapse, N: 1}).add(trace.Step{Kind: trace.Lose, Node: nodeA, Note: "lease"})
	}
	refusedFor(t, "late", lapse(1400), trace.Lapse, "after the lease's deadline")
	refusedFor(t, "in time", lapse(1200), 0, "")
	b := holding().wait(1300).add(trace.Step{Kind: trace.GateEnter, Path: lockB, Wait: true})
	refusedFor(t, "no lapse", b, trace.GateEnter, "past the lease's deadline and no lapse")
	b = lapse(1400)
	b.steps = append(b.steps, trace.Step{Seq: uint64(len(b.steps) + 1), T: 1500, Pid: 2, Kind: trace.Pause, N: 1,
		At: 1000, Until: 1300})
	if r := refusedFor(t, "paused", b, 0, ""); r.Paused != 1 || !strings.Contains(r.Outside(), "stop of their process") {
		t.Errorf("paused: %d excused, summary %q", r.Paused, r.Outside())
	}
}

// A grant follows its verdict by at most tol; a verdict "now" comes no
// later than tol after the lease's deadline.
func TestHandMadeGrantOnTime(t *testing.T) {
	for _, c := range []struct {
		d    int64
		kind trace.Kind
	}{{300, trace.Grant}, {100, 0}} {
		b := holding()
		b.steps = b.steps[:len(b.steps)-1] // the grant, added again after d
		b.wait(c.d - 10).add(trace.Step{Kind: trace.Grant, Path: lockA, Node: nodeA, Owner: 7, Zxid: 20})
		refusedFor(t, "grant", b, c.kind, "after its verdict")
	}
	// A second acquisition whose create renewed nothing, judged "now" at
	// 1400, the lease having ended at 1060 with no hold to lapse.
	b := holding().release(lockA, nodeA).add(trace.Step{Kind: trace.GateEnter, Path: lockB, Wait: true}).
		add(trace.Step{Kind: trace.Send, Op: trace.OpCreate, Path: pfxB}).
		add(trace.Step{Kind: trace.Send, Op: trace.OpList, Path: lockB}).
		add(trace.Step{Kind: trace.Answer, Op: trace.OpCreate, Path: pfxB, Node: nodeB}).
		add(trace.Step{Kind: trace.Answer, Op: trace.OpList, Path: lockB, N: 1, Pzxid: 21}).
		add(trace.Step{Kind: trace.Turn, Node: nodeB, Pzxid: 21, Note: "first"})
	b.wait(1400 - int64(b.n+1)*10).add(trace.Step{Kind: trace.Grant, Owner: 7, Note: "now"})
	refusedFor(t, "verdict", b, trace.Grant, "verdict now after the lease's deadline")
}
