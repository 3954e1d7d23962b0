package replay

import (
	"strings"
	"testing"

	"github.com/tierlock/tierlock/internal/trace"
)

// Hand-made traces of the session's writer (writer.go), as the code
// records its requests since main 54c8475: each refused trace has one
// wrong step, and its right twin replays clean.

const (
	pfxA2  = lockA + "/_c_5555-lock-"
	nodeA2 = pfxA2 + "0000000006"
)

func wcre(prefix string) trace.BatchWrite { return trace.BatchWrite{Op: trace.OpCreate, Path: prefix} }
func wdel(node string) trace.BatchWrite   { return trace.BatchWrite{Op: trace.OpDelete, Path: node} }

// requestOp is the op and path a writer's request of ws is recorded by.
func requestOp(ws []trace.BatchWrite) (trace.Op, string) {
	if len(ws) == 1 {
		return ws[0].Op, ws[0].Path
	}
	return trace.OpMulti, ws[0].Path
}

// send adds the writer's request of ws.
func (b *tr) send(ws ...trace.BatchWrite) *tr {
	op, p := requestOp(ws)
	return b.add(trace.Step{Kind: trace.Send, Op: op, Path: p, Writes: ws})
}

// answer adds the answer to the writer's request of ws: failed at write n
// with out (n -1 and out "": applied, making nodes; out alone: unknown).
func (b *tr) answer(ws []trace.BatchWrite, n int, out string, nodes ...string) *tr {
	op, p := requestOp(ws)
	return b.add(trace.Step{Kind: trace.Answer, Op: op, Path: p, N: n, Out: out, Creates: nodes})
}

// wacquire is acquire through the writer: the create of prefix in a
// request after the writes before (a released node's delete, say), the
// listing behind it, the answer making node, the renew, the turn, the
// verdict and the grant.
func (b *tr) wacquire(lock, prefix, node string, token int64, before ...trace.BatchWrite) *tr {
	ws := append(before, wcre(prefix))
	b.add(trace.Step{Kind: trace.GateEnter, Path: lock, Wait: true}).send(ws...)
	sent := b.steps[len(b.steps)-1].T
	return b.add(trace.Step{Kind: trace.Send, Op: trace.OpList, Path: lock}).
		answer(ws, -1, "", node).
		renew(sent + b.bound()).
		add(trace.Step{Kind: trace.Answer, Op: trace.OpList, Path: lock, N: 1, Pzxid: token}).
		add(trace.Step{Kind: trace.Turn, Node: node, Pzxid: token, Note: "first"}).
		add(trace.Step{Kind: trace.Grant, Owner: b.sid, Note: "now"}).
		add(trace.Step{Kind: trace.Grant, Path: lock, Node: node, Owner: b.sid, Zxid: token})
}

// heldThenReleased is A acquired and released, its delete queued, and the
// gate entered again.
func heldThenReleased() *tr {
	return newTr(7).wacquire(lockA, pfxA, nodeA, 20).release(lockA, nodeA).
		add(trace.Step{Kind: trace.GateEnter, Path: lockA, Wait: true})
}

// TestHandMadeWriterClean: the writer's steps the code takes replay clean:
// a released node's delete ahead of the next create in one multi; a multi
// failed at its create (the lock path missing), its delete queued again
// and sent again ahead of the create; a request whose outcome is unknown,
// sent again whole (its delete queued again at the head, its create again
// by protection mode's retry); refused at its delete, which the guaranteed
// retry then sends; a refused batch's writes sent again apart (each
// alone, side by side), a Lock's create once its delete's answer came; an
// abandoned create's node deleted ahead of the Lock's
// next create; a moot delete (its node's session over) dropped unsent
// while a create goes out.
func TestHandMadeWriterClean(t *testing.T) {
	b := newTr(7).wacquire(lockA, pfxA, nodeA, 20).release(lockA, nodeA).
		wacquire(lockB, pfxB, nodeB, 21, wdel(nodeA)).release(lockB, nodeB).
		add(trace.Step{Kind: trace.GateEnter, Path: lockB, Wait: true})
	again := []trace.BatchWrite{wdel(nodeB), wcre(lockB + "/_c_6666-lock-")}
	b.send(again...).answer(again, 1, "nonode").
		send(again...).answer(again, -1, "conn").
		send(again...).answer(again, 0, "refused").
		add(trace.Step{Kind: trace.Send, Op: trace.OpDelete, Path: nodeB, Node: nodeB, Retry: true}).
		add(trace.Step{Kind: trace.Answer, Op: trace.OpDelete, Path: nodeB, Node: nodeB, Retry: true})
	if v := replayed(t, "writer", b.jsonl(t)).First(); v != nil {
		t.Fatal(v)
	}
	if v := replayed(t, "apart", apart(true).jsonl(t)).First(); v != nil {
		t.Fatal(v)
	}
	if v := replayed(t, "abandoned", abandoned(true).jsonl(t)).First(); v != nil {
		t.Fatal(v)
	}
	moot := heldThenReleased()
	moot.add(trace.Step{Kind: trace.Event, Note: "EventSession StateExpired"})
	moot.sid = 8
	moot.add(trace.Step{Kind: trace.Event, Note: "EventSession StateHasSession"}).send(wcre(pfxA2))
	if v := replayed(t, "moot", moot.jsonl(t)).First(); v != nil {
		t.Fatal(v)
	}
}

// abandoned is a wait on B given up while its create is out: the writer
// settles the create, made, and queues its node's delete at the head of
// the queue (its del_add after the answer); then the Lock's next create
// goes, after that delete (ahead: true) or without it.
func abandoned(ahead bool) *tr {
	const pfx = lockB + "/_c_7777-lock-"
	b := newTr(7).add(trace.Step{Kind: trace.GateEnter, Path: lockB, Wait: true}).
		send(wcre(pfx)).
		add(trace.Step{Kind: trace.Grant, Path: lockB, Out: "ctx", Note: "context canceled"}).
		add(trace.Step{Kind: trace.GateLeave, Path: lockB}).
		answer([]trace.BatchWrite{wcre(pfx)}, -1, "", pfx+"0000000008").
		add(trace.Step{Kind: trace.DelAdd, Path: lockB, Node: pfx + "0000000008", Owner: 7}).
		add(trace.Step{Kind: trace.GateEnter, Path: lockB, Wait: true})
	if ahead {
		return b.send(wdel(pfx+"0000000008"), wcre(pfxB))
	}
	return b.send(wcre(pfxB))
}

// apart is a refused batch's writes sent again apart (main 7241c04), each
// alone and side by side: A's released node's delete and B's create out
// at once; then A's next create, once the delete's answer came (answered:
// true) or while it is still out.
func apart(answered bool) *tr {
	ws := []trace.BatchWrite{wdel(nodeA), wcre(pfxB)}
	b := heldThenReleased().add(trace.Step{Kind: trace.GateEnter, Path: lockB, Wait: true}).
		send(ws...).answer(ws, 1, "nonode").
		send(wdel(nodeA)).send(wcre(pfxB))
	if answered {
		b.answer(ws[:1], -1, "")
	}
	return b.send(wcre(pfxA2))
}

func TestHandMadeWriterRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		trace func() *tr
		kind  trace.Kind
		rule  string
	}{
		// create-before-delete's step: the create goes, its delete stays
		{"a create while its path's delete is queued", func() *tr {
			return heldThenReleased().send(wcre(pfxA2))
		}, trace.Send, "has its delete queued, not in a request on the wire"},
		{"a create ahead of its path's delete in one multi", func() *tr {
			return heldThenReleased().send(wcre(pfxA2), wdel(nodeA))
		}, trace.Send, "ahead of its path's released node's delete"},
		{"a create while the failed multi's delete is queued again", func() *tr {
			ws := []trace.BatchWrite{wdel(nodeA), wcre(pfxB)}
			return heldThenReleased().add(trace.Step{Kind: trace.GateEnter, Path: lockB, Wait: true}).
				send(ws...).answer(ws, 1, "nonode").send(wcre(pfxA2))
		}, trace.Send, "has its delete queued, not in a request on the wire"},
		{"a create ahead of an abandoned create's node's delete", func() *tr { return abandoned(false) },
			trace.Send, "has its delete queued, not in a request on the wire"},
		{"a create while its path's delete is in another request out", func() *tr { return apart(false) },
			trace.Send, "is in another request, unanswered"},
		{"a delete the failed answer settled, sent again", func() *tr {
			ws := []trace.BatchWrite{wdel(nodeA), wcre(pfxA2)}
			return heldThenReleased().send(ws...).answer(ws, 0, "nonode").send(ws...)
		}, trace.Send, "which is not queued"},
		{"a delete the server refused, left to the retry, sent again by the writer", func() *tr {
			ws := []trace.BatchWrite{wdel(nodeA), wcre(pfxA2)}
			return heldThenReleased().send(ws...).answer(ws, 0, "refused").send(wdel(nodeA))
		}, trace.Send, "which is background, not queued"},
		{"a create while the delete of unknown outcome is queued again", func() *tr {
			ws := []trace.BatchWrite{wdel(nodeA), wcre(pfxA2)}
			return heldThenReleased().send(ws...).answer(ws, -1, "conn").send(wcre(pfxA2))
		}, trace.Send, "has its delete queued, not in a request on the wire"},
		{"a delete sent again while its request is out", func() *tr {
			return heldThenReleased().send(wdel(nodeA)).send(wdel(nodeA), wcre(pfxA2))
		}, trace.Send, "which is wire, not queued"},
		{"a create sent again while its request is out", func() *tr {
			ws := []trace.BatchWrite{wdel(nodeA), wcre(pfxA2)}
			return heldThenReleased().send(ws...).send(wcre(pfxA2))
		}, trace.Send, "sent again while the request carrying it is unanswered"},
		{"an answer making a node no create of the request makes", func() *tr {
			ws := []trace.BatchWrite{wdel(nodeA), wcre(pfxA2)}
			return heldThenReleased().send(ws...).answer(ws, -1, "", pfxB+"0000000007")
		}, trace.Answer, "where the request's create 0 is of"},
		{"an answer failing a write the request does not have", func() *tr {
			ws := []trace.BatchWrite{wdel(nodeA), wcre(pfxA2)}
			return heldThenReleased().send(ws...).answer(ws, 2, "nonode")
		}, trace.Answer, "failing write 2 of a request of 2"},
		{"an answer making more nodes than the request creates", func() *tr {
			ws := []trace.BatchWrite{wdel(nodeA), wcre(pfxA2)}
			return heldThenReleased().send(ws...).answer(ws, -1, "", nodeA2, pfxA2+"0000000007")
		}, trace.Answer, "making 2 node(s) to a request of 1 create(s)"},
		{"an answer applied whole naming a write failed", func() *tr {
			ws := []trace.BatchWrite{wdel(nodeA), wcre(pfxA2)}
			return heldThenReleased().send(ws...).answer(ws, 1, "", nodeA2)
		}, trace.Answer, "applied whole that names write 1 failed"},
		{"a delete queued naming another owner than its node's", func() *tr {
			return newTr(7).wacquire(lockA, pfxA, nodeA, 20).
				add(trace.Step{Kind: trace.Release, Path: lockA, Node: nodeA}).
				add(trace.Step{Kind: trace.DelAdd, Path: lockA, Node: nodeA, Owner: 9})
		}, trace.DelAdd, "naming session 9 the owner of a node created in session 7"},
		{"a failed answer naming a node made", func() *tr {
			ws := []trace.BatchWrite{wdel(nodeA), wcre(pfxA2)}
			return heldThenReleased().send(ws...).answer(ws, 0, "nonode", nodeA2)
		}, trace.Answer, "applies none of its ops"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := replayed(t, c.name, c.trace().jsonl(t)).First()
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
