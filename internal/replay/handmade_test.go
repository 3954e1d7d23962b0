package replay

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tierlock/tierlock/internal/trace"
)

// Hand-made traces, named as a real run names its nodes, each with one
// step the model does not allow: the replay must refuse that step, for
// the reason given.

const (
	lockA = "/t/a"
	lockB = "/t/b"
	pfxA  = lockA + "/_c_1111-lock-"
	pfxB  = lockB + "/_c_2222-lock-"
	nodeA = pfxA + "0000000003"
	nodeB = pfxB + "0000000004"
)

// tr builds a trace of process 1, session sid, numbering the steps and
// giving each a time 10 units after the one before. Before the first step
// of each session of a process it adds the server's answer granting it,
// with a session timeout of handT (so that the lease's reach R, 7T/8, is
// 3500 units), 5 units earlier: read at the wire, as under Connect, its
// connect request written 1 unit before (so that the session's renews
// may count from it), or, untapped, as under NewSession.
type tr struct {
	steps []trace.Step
	sid   int64
	proc  int
	n     int               // steps added by add
	seen  map[[2]int64]bool // (proc, sid) pairs granted
	last  map[int]int64     // the last session of each proc
	shook map[[2]int64]int64
	// expiry: the session's renews reach 3000 (3T/4, within the
	// expiry-only policy's R, 9T/8), not 1000.
	expiry bool
	// untapped: the server's answers are read by go-zookeeper, as under
	// NewSession: no renew counts from them, and the wire's steps (write,
	// touch) are not recorded.
	untapped bool
}

// bound is how far past its touch the trace's renews put their deadline:
// within R under either policy.
func (b *tr) bound() int64 {
	if b.expiry {
		return handT * 3 / 4
	}
	return handT / 4
}

// handT is the session timeout the hand-made server grants.
const handT = 4000

// note is the handshakes' Note.
func (b *tr) note() string {
	if b.untapped {
		return trace.HandshakeConn
	}
	return trace.HandshakeWire
}

func (b *tr) add(s trace.Step) *tr {
	b.n++
	s.T = int64(b.n) * 10
	s.Pid, s.Sid = 1, b.sid
	if s.Proc == 0 {
		s.Proc = max(b.proc, 1)
	}
	if b.seen == nil {
		b.seen, b.last, b.shook = map[[2]int64]bool{}, map[int]int64{}, map[[2]int64]int64{}
	}
	if k := [2]int64{int64(s.Proc), b.sid}; !b.seen[k] {
		b.seen[k] = true
		h := trace.Step{Seq: uint64(len(b.steps) + 1), T: s.T - 5, Pid: 1, Proc: s.Proc,
			Sid: b.last[s.Proc], Kind: trace.Handshake, Owner: b.sid, Timeout: handT, Note: b.note()}
		if !b.untapped {
			h.At = h.T - 1
			b.shook[k] = h.At
		}
		b.steps = append(b.steps, h)
	}
	b.last[s.Proc] = b.sid
	s.Seq = uint64(len(b.steps) + 1)
	b.steps = append(b.steps, s)
	return b
}

// renew adds a renew of the current session counted from its handshake's
// connect request, its deadline until.
func (b *tr) renew(until int64) *tr {
	b.add(trace.Step{Kind: trace.Renew, Owner: b.sid, Until: until})
	st := &b.steps[len(b.steps)-1]
	st.At = b.shook[[2]int64{int64(st.Proc), b.sid}]
	return b
}

// acquire adds an uncontended acquisition of node on lock, granted: the
// gate, the create and its listing, their answers, the renew, the turn,
// the verdict and the grant.
func (b *tr) acquire(lock, prefix, node string, token int64) *tr {
	t := int64(b.n+1) * 10
	return b.add(trace.Step{Kind: trace.GateEnter, Path: lock, Wait: true}).
		add(trace.Step{Kind: trace.Send, Op: trace.OpCreate, Path: prefix}).
		add(trace.Step{Kind: trace.Send, Op: trace.OpList, Path: lock}).
		add(trace.Step{Kind: trace.Answer, Op: trace.OpCreate, Path: prefix, Node: node}).
		renew(t + 10 + b.bound()).
		add(trace.Step{Kind: trace.Answer, Op: trace.OpList, Path: lock, N: 1, Pzxid: token}).
		add(trace.Step{Kind: trace.Turn, Node: node, Pzxid: token, Note: "first"}).
		add(trace.Step{Kind: trace.Grant, Owner: b.sid, Note: "now"}).
		add(trace.Step{Kind: trace.Grant, Path: lock, Node: node, Owner: b.sid, Zxid: token})
}

// release adds the release of node on lock, its delete queued, the gate
// left.
func (b *tr) release(lock, node string) *tr {
	return b.add(trace.Step{Kind: trace.Release, Path: lock, Node: node}).
		add(trace.Step{Kind: trace.DelAdd, Path: lock, Node: node}).
		add(trace.Step{Kind: trace.GateLeave, Path: lock})
}

func (b *tr) jsonl(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, s := range b.steps {
		line, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(append(line, '\n'))
	}
	return buf.Bytes()
}

func newTr(sid int64) *tr { return &tr{sid: sid} }

// TestHandMadeClean: the builder's own traces replay clean, so that what
// the others refuse is their one wrong step.
func TestHandMadeClean(t *testing.T) {
	b := newTr(7).acquire(lockA, pfxA, nodeA, 20).release(lockA, nodeA).
		acquire(lockB, pfxB, nodeB, 21).release(lockB, nodeB)
	if v := replayed(t, "clean", b.jsonl(t)).First(); v != nil {
		t.Fatal(v)
	}
}

func TestHandMadeRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		trace func() *tr
		kind  trace.Kind
		rule  string
	}{
		{"grant with no listing that found us first", grantUnlisted, trace.Turn, "no listing answered"},
		{"grant after a turn that found a predecessor", grantWaiting, trace.Grant, "no listing found first"},
		{"renew of an older session", renewOldSession, trace.Renew, "a renew of session 7 while the session is 8"},
		{"renew counted from the answer", renewFromAnswer, trace.Renew, "which no handshake nor chain shows"},
		{"delete riding a create of another path", deleteOtherPath, trace.Send, "delete queued"},
		{"multi carrying no delete", multiNothing, trace.Send, "carrying no delete"},
		{"guaranteed delete of a node a create carries", retryTaken, trace.Send, "no failed or left-over delete"},
		{"loss with no lapse nor disconnection", loseUntold, trace.Lose, "no lapse, disconnection"},
		{"grant while disconnected", grantDisconnected, trace.Grant, "disconnected"},
		{"gate passed with no node kept", passEmpty, trace.GatePass, "no node kept"},
		{"two processes holding", twoHolders, trace.Grant, "assert(nvalid == 0)"},
		{"token going back", tokenBack, trace.Grant, "fencing token"},
		{"node numbered out of creation order", numberBack, trace.Answer, "order of creation"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := c.trace()
			v := replayed(t, c.name, b.jsonl(t)).First()
			switch {
			case v == nil:
				t.Fatal("replayed clean")
			case v.Step.Kind != c.kind || !strings.Contains(v.Rule, c.rule):
				t.Fatalf("refused %v, want a %s step refused for %q", v, c.kind, c.rule)
			}
			t.Logf("refused: %v", v)
		})
	}
}

func grantUnlisted() *tr {
	b := newTr(7).add(trace.Step{Kind: trace.GateEnter, Path: lockA, Wait: true}).
		add(trace.Step{Kind: trace.Send, Op: trace.OpCreate, Path: pfxA}).
		add(trace.Step{Kind: trace.Answer, Op: trace.OpCreate, Path: pfxA, Node: nodeA})
	return b.add(trace.Step{Kind: trace.Turn, Node: nodeA, Pzxid: 5, Note: "first"}).
		add(trace.Step{Kind: trace.Grant, Owner: 7, Note: "now"}).
		add(trace.Step{Kind: trace.Grant, Path: lockA, Node: nodeA, Owner: 7, Zxid: 5})
}

func grantWaiting() *tr {
	b := newTr(7).add(trace.Step{Kind: trace.GateEnter, Path: lockA, Wait: true}).
		add(trace.Step{Kind: trace.Send, Op: trace.OpCreate, Path: pfxA}).
		add(trace.Step{Kind: trace.Send, Op: trace.OpList, Path: lockA}).
		add(trace.Step{Kind: trace.Answer, Op: trace.OpCreate, Path: pfxA, Node: nodeA}).
		renew(1020).
		add(trace.Step{Kind: trace.Answer, Op: trace.OpList, Path: lockA, N: 2}).
		add(trace.Step{Kind: trace.Turn, Node: nodeA, N: 1, Note: "wait"}).
		add(trace.Step{Kind: trace.Event, Path: lockA + "/_c_9-lock-0000000002", Note: "EventNodeDeleted StateHasSession"})
	// the watch fired, and the waiter goes on as leading without listing
	return b.add(trace.Step{Kind: trace.Grant, Owner: 7, Note: "now"}).
		add(trace.Step{Kind: trace.Grant, Path: lockA, Node: nodeA, Owner: 7, Zxid: 5})
}

func renewOldSession() *tr {
	b := newTr(7).add(trace.Step{Kind: trace.Send, Op: trace.OpSync, Path: "/"}).
		add(trace.Step{Kind: trace.Answer, Op: trace.OpSync, Path: "/"}).
		add(trace.Step{Kind: trace.Event, Note: "EventSession StateDisconnected"})
	b.sid = 8 // expired: the reconnection brings a new session
	return b.add(trace.Step{Kind: trace.Event, Note: "EventSession StateHasSession"}).
		add(trace.Step{Kind: trace.Renew, Owner: 7, At: 10, Until: 1010})
}

func renewFromAnswer() *tr {
	return newTr(7).add(trace.Step{Kind: trace.Send, Op: trace.OpSync, Path: "/"}).
		add(trace.Step{Kind: trace.Answer, Op: trace.OpSync, Path: "/"}).
		add(trace.Step{Kind: trace.Renew, Owner: 7, At: 25, Until: 1025}) // the answer came at 20
}

// deleteOtherPath: path a's released node's delete is pending when a's
// next create goes out carrying path b's delete instead.
func deleteOtherPath() *tr {
	b := newTr(7).acquire(lockB, pfxB, nodeB, 20).release(lockB, nodeB).
		acquire(lockA, pfxA, nodeA, 21).release(lockA, nodeA)
	return b.add(trace.Step{Kind: trace.GateEnter, Path: lockA, Wait: true}).
		add(trace.Step{Kind: trace.DelTake, Path: lockB, Node: nodeB}).
		add(trace.Step{Kind: trace.Send, Op: trace.OpMulti, Path: lockA + "/_c_3333-lock-"})
}

func multiNothing() *tr {
	return newTr(7).add(trace.Step{Kind: trace.GateEnter, Path: lockA, Wait: true}).
		add(trace.Step{Kind: trace.Send, Op: trace.OpMulti, Path: pfxA})
}

// retryTaken: the released node's delete, taken by the next create, is
// also sent by a guaranteed delete (delete-wrong-create's trace: the
// create carries another node's delete, ours goes alone).
func retryTaken() *tr {
	b := newTr(7).acquire(lockA, pfxA, nodeA, 20).release(lockA, nodeA)
	return b.add(trace.Step{Kind: trace.GateEnter, Path: lockA, Wait: true}).
		add(trace.Step{Kind: trace.DelTake, Path: lockA, Node: nodeA}).
		add(trace.Step{Kind: trace.Send, Op: trace.OpDelete, Path: nodeA, Node: nodeA, Retry: true})
}

func loseUntold() *tr {
	return newTr(7).acquire(lockA, pfxA, nodeA, 20).
		add(trace.Step{Kind: trace.Lose, Node: nodeA, Out: "nonode", Note: "zklock: lock node deleted"})
}

func grantDisconnected() *tr {
	b := newTr(7).add(trace.Step{Kind: trace.GateEnter, Path: lockA, Wait: true}).
		add(trace.Step{Kind: trace.Send, Op: trace.OpCreate, Path: pfxA}).
		add(trace.Step{Kind: trace.Send, Op: trace.OpList, Path: lockA}).
		add(trace.Step{Kind: trace.Answer, Op: trace.OpCreate, Path: pfxA, Node: nodeA}).
		renew(1020).
		add(trace.Step{Kind: trace.Answer, Op: trace.OpList, Path: lockA, N: 1}).
		add(trace.Step{Kind: trace.Turn, Node: nodeA, Note: "first"})
	return b.add(trace.Step{Kind: trace.Event, Note: "EventSession StateDisconnected"}).
		add(trace.Step{Kind: trace.Grant, Owner: 7, Note: "now"})
}

func passEmpty() *tr {
	return newTr(7).add(trace.Step{Kind: trace.GateEnter, Path: lockA, Wait: true}).
		add(trace.Step{Kind: trace.GatePass, Path: lockA})
}

// twoHolders: process 2 is granted the lock while process 1's hold is
// valid (in one file, as two sessions of one process would be).
func twoHolders() *tr {
	b := newTr(7).acquire(lockA, pfxA, nodeA, 20)
	b.proc, b.sid = 2, 9
	return b.acquire(lockA, lockA+"/_c_4444-lock-", lockA+"/_c_4444-lock-0000000005", 22)
}

func tokenBack() *tr {
	b := newTr(7).acquire(lockA, pfxA, nodeA, 20).release(lockA, nodeA)
	b.proc, b.sid = 2, 9
	return b.acquire(lockA, lockA+"/_c_4444-lock-", lockA+"/_c_4444-lock-0000000005", 19)
}

// numberBack: process 2's create, sent after process 1's was answered
// with node 3, is answered with node 2.
func numberBack() *tr {
	b := newTr(7).acquire(lockA, pfxA, nodeA, 20).release(lockA, nodeA)
	b.proc, b.sid = 2, 9
	return b.acquire(lockA, lockA+"/_c_4444-lock-", lockA+"/_c_4444-lock-0000000002", 22)
}
