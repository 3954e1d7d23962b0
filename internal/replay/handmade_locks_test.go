package replay

import (
	"strings"
	"testing"

	"github.com/tierlock/tierlock/internal/trace"
)

// Two Locks of one session on one path (stress's close fault remakes a
// worker's locks while its goroutines acquire): the old Lock's wait ends
// (its node's delete queued, its gate left) right after a goroutine
// entered the gate of a Lock whose instance the replay reuses. The gate
// left is the ended acquisition's, not the one just entered; taken for
// the entered one, the next create was given to the ended Lock and
// refused at pathClear (seen in a 10-minute stress -fault all run, at its
// step 64,413, before forLeave preferred the ended acquisition).
func TestHandMadeTwoLocksOnAPath(t *testing.T) {
	const (
		pfxB  = lockA + "/_c_3333-lock-"
		pfxC  = lockA + "/_c_4444-lock-"
		nodeB = pfxB + "0000000005"
	)
	b := newTr(7).
		// Lock A: queued behind another process's node.
		add(trace.Step{Kind: trace.GateEnter, Path: lockA, Wait: true}).
		add(trace.Step{Kind: trace.Send, Op: trace.OpCreate, Path: pfxA}).
		add(trace.Step{Kind: trace.Send, Op: trace.OpList, Path: lockA}).
		add(trace.Step{Kind: trace.Answer, Op: trace.OpCreate, Path: pfxA, Node: nodeA}).
		add(trace.Step{Kind: trace.Answer, Op: trace.OpList, Path: lockA, N: 2, Pzxid: 30}).
		add(trace.Step{Kind: trace.Turn, Node: nodeA, N: 1, Pzxid: 30, Note: "wait"}).
		// Lock B, made by the fault: queued behind A's node.
		add(trace.Step{Kind: trace.GateEnter, Path: lockA, Wait: true}).
		add(trace.Step{Kind: trace.Send, Op: trace.OpCreate, Path: pfxB}).
		add(trace.Step{Kind: trace.Send, Op: trace.OpList, Path: lockA}).
		add(trace.Step{Kind: trace.Answer, Op: trace.OpCreate, Path: pfxB, Node: nodeB}).
		add(trace.Step{Kind: trace.Answer, Op: trace.OpList, Path: lockA, N: 3, Pzxid: 31}).
		add(trace.Step{Kind: trace.Turn, Node: nodeB, N: 2, Pzxid: 31, Note: "wait"}).
		// A is closed: its wait ends, its node's delete goes out.
		add(trace.Step{Kind: trace.DelAdd, Path: lockA, Node: nodeA}).
		add(trace.Step{Kind: trace.GateLeave, Path: lockA}).
		add(trace.Step{Kind: trace.DelFlush, Path: lockA, Node: nodeA}).
		add(trace.Step{Kind: trace.Send, Op: trace.OpDelete, Path: nodeA}).
		// Lock C's goroutine enters (the replay reuses A's instance), and
		// B is closed in turn: B's wait ends and B's gate is left.
		add(trace.Step{Kind: trace.GateEnter, Path: lockA, Wait: true}).
		add(trace.Step{Kind: trace.DelAdd, Path: lockA, Node: nodeB}).
		add(trace.Step{Kind: trace.GateLeave, Path: lockA}).
		// C creates: its own Lock has no released node pending.
		add(trace.Step{Kind: trace.Send, Op: trace.OpCreate, Path: pfxC})
	if v := replayed(t, "two-locks", b.jsonl(t)).First(); v != nil {
		t.Fatal(v)
	}
}

// lateWatch is a wait on A, queued behind node 2, given up (its Lock
// closed): its node's delete queued, its gate left, another goroutine in;
// then the watch request the wait launched is recorded (its goroutine ran
// late, seen in a 3-minute stress -fault all run under the close fault) —
// or, ended: false, a watch with no wait that ended, in a fresh Lock.
func lateWatch(ended bool) *tr {
	const pred = lockA + "/_c_9-lock-0000000002"
	b := newTr(7).add(trace.Step{Kind: trace.GateEnter, Path: lockA, Wait: true}).
		send(wcre(pfxA)).
		add(trace.Step{Kind: trace.Send, Op: trace.OpList, Path: lockA}).
		answer([]trace.BatchWrite{wcre(pfxA)}, -1, "", nodeA).
		add(trace.Step{Kind: trace.Answer, Op: trace.OpList, Path: lockA, N: 2, Pzxid: 30}).
		add(trace.Step{Kind: trace.Turn, Node: nodeA, N: 1, Pzxid: 30, Note: "wait"})
	if ended {
		b.add(trace.Step{Kind: trace.DelAdd, Path: lockA, Node: nodeA, Owner: 7}).
			add(trace.Step{Kind: trace.GateLeave, Path: lockA}).
			add(trace.Step{Kind: trace.GateEnter, Path: lockA, Wait: true})
	} else {
		b = newTr(7).add(trace.Step{Kind: trace.GateEnter, Path: lockA, Wait: true})
	}
	return b.add(trace.Step{Kind: trace.Send, Op: trace.OpGetW, Path: pred})
}

func TestHandMadeLateWatch(t *testing.T) {
	r := replayed(t, "late watch", lateWatch(true).jsonl(t))
	if v := r.First(); v != nil || r.LateWatches != 1 {
		t.Fatalf("%v; %d late watches", v, r.LateWatches)
	}
	if v := replayed(t, "stray watch", lateWatch(false).jsonl(t)).First(); v == nil || v.Step.Kind != trace.Send ||
		!strings.Contains(v.Rule, "a watch set while our node is idle") {
		t.Fatalf("refused %v, want the watch", v)
	}
}
