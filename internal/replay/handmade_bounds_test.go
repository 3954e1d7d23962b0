package replay

import (
	"strings"
	"testing"

	"github.com/tierlock/tierlock/internal/trace"
)

// Hand-made traces of the bounds the replay derives from the server's
// answers (bounds.go) and of the model's timing (timing.go): each is
// refused at its one wrong step, and the same trace put right replays
// clean. The hand-made server grants T = 4000 units: B = 1000 under the
// default policy, and the code may take tol = T/16 = 250 units for a step
// the model takes with another.

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

// sync adds a sync sent and answered (with a write in between when the
// writes are recorded) and returns the time of its send.
func (b *tr) sync() (sent int64) {
	b.add(trace.Step{Kind: trace.Send, Op: trace.OpSync, Path: "/"})
	sent = b.steps[len(b.steps)-1].T
	if b.wire {
		b.write()
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

// The lease's bound is the server's T/4, not what the code's renews say:
// a renew to T/2 after its proof's send is refused, one to T/4 or sooner
// replays clean.
func TestHandMadeBoundFromServer(t *testing.T) {
	for _, c := range []struct {
		b    int64
		kind trace.Kind
	}{{2000, trace.Renew}, {1000, 0}, {900, 0}} {
		b := newTr(7)
		at := b.sync()
		b.add(trace.Step{Kind: trace.Renew, Owner: 7, At: at, Until: at + c.b})
		refusedFor(t, "bound", b, c.kind, "past its proof's send")
	}
	// With no answer of the server's recorded, no bound can be derived.
	b := newTr(7)
	at := b.sync()
	b.add(trace.Step{Kind: trace.Renew, Owner: 7, At: at, Until: at + 1000})
	b.steps = b.steps[1:] // the handshake
	refusedFor(t, "no handshake", b, trace.Renew, "cannot be derived")
}

// Under Connect the send time is the wire's: the first write after the
// request was handed over, capped at the write before it + T/8. A proof
// written 1000 units after the write before it renews to at most 510 +
// B, not from its own write; a session whose writes are recorded and show
// none between a request and its answer dates nothing.
func TestHandMadeSendTimeFromWire(t *testing.T) {
	for _, c := range []struct {
		at   int64
		kind trace.Kind
	}{{0, trace.Renew}, {500, 0}} { // the write's own start, uncapped; capped at the ping + T/8
		b := newTr(7)
		b.wire = true
		b.write() // a ping at 9
		b.wait(1000)
		b.sync()
		w := b.steps[len(b.steps)-2].At // the sync's write
		at := w
		if c.at != 0 {
			at = b.steps[1].At + c.at
		}
		b.add(trace.Step{Kind: trace.Renew, Owner: 7, At: at, Until: at + 1000})
		refusedFor(t, "cap", b, c.kind, "past its proof's send")
	}
	b := newTr(7)
	b.wire = true
	b.add(trace.Step{Kind: trace.Send, Op: trace.OpSync, Path: "/"}).
		add(trace.Step{Kind: trace.Answer, Op: trace.OpSync, Path: "/"}).
		add(trace.Step{Kind: trace.Renew, Owner: 7, At: 10, Until: 1010})
	refusedFor(t, "no write", b, trace.Renew, "no write on the connection")
}

// A flood's answers are recorded out of their order, and its renews out
// of theirs: each renew takes the proof that justifies its deadline with
// the least to spare, so that a later-sent proof is left for its own.
func TestHandMadeRenewsScrambled(t *testing.T) {
	b := newTr(7).
		add(trace.Step{Kind: trace.Send, Op: trace.OpSync, Path: "/"}).       // t 10: A
		add(trace.Step{Kind: trace.Send, Op: trace.OpTxn, Path: "/t/a/n"}).   // t 20: B
		add(trace.Step{Kind: trace.Answer, Op: trace.OpTxn, Path: "/t/a/n"}). // t 30: B's, recorded first
		add(trace.Step{Kind: trace.Answer, Op: trace.OpSync, Path: "/"}).     // t 40: A's
		add(trace.Step{Kind: trace.Renew, Owner: 7, At: 10, Until: 1010}).    // A's renew
		add(trace.Step{Kind: trace.Renew, Owner: 7, At: 20, Until: 1020})     // B's
	refusedFor(t, "scrambled", b, 0, "")
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
