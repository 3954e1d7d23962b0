//go:build tierlocktrace

package trace_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/trace"
)

// With the tag, Start records every step, in order, into
// dir/trace-<pid>.jsonl; Stop ends it.
func TestOnRecords(t *testing.T) {
	dir := t.TempDir()
	r, err := trace.Start(dir)
	if err != nil || r == nil {
		t.Fatalf("Start = %v, %v", r, err)
	}
	start := time.Now()
	trace.GateEntered(nil, "/l", true)
	trace.Sent(nil, trace.OpCreate, "/l/p")
	trace.Answered(nil, trace.OpCreate, "/l/p", "/l/p0000000001", nil)
	trace.Listed(nil, trace.OpList, "/l", []string{"p0000000001"}, &zk.Stat{Pzxid: 7}, nil)
	trace.Turned(nil, "/l/p0000000001", 0, true, 7)
	trace.Renewed(nil, 1, start, start.Add(time.Second))
	trace.Granted(nil, "/l", "/l/p0000000001", 1, 7, nil)
	if err := trace.Stop(); err != nil {
		t.Fatal(err)
	}
	trace.GateLeft(nil, "/l") // after Stop: not recorded
	steps, err := trace.ReadFile(trace.FileName(dir, r.Pid()))
	if err != nil {
		t.Fatal(err)
	}
	want := []trace.Kind{trace.GateEnter, trace.Send, trace.Answer, trace.Answer, trace.Turn, trace.Renew, trace.Grant}
	if len(steps) != len(want) {
		t.Fatalf("%d steps, want %d: %v", len(steps), len(want), steps)
	}
	for i, s := range steps {
		if s.Kind != want[i] || s.Seq != uint64(i+1) {
			t.Errorf("step %d: %v, want kind %v", i, s, want[i])
		}
	}
	if l := steps[3]; l.Pzxid != 7 || l.N != 1 {
		t.Errorf("listing step %v", l)
	}
	if rn := steps[5]; rn.Until-rn.At != int64(time.Second) {
		t.Errorf("renew step %v: deadline not a second after the send", rn)
	}
}

// A session step names its policy and the tick it was told.
func TestOnSession(t *testing.T) {
	steps := recorded(t, func() {
		trace.SessionOpened(nil, nil, true, 0)
		trace.SessionOpened(nil, nil, false, 200*time.Millisecond)
	})
	if len(steps) != 2 || steps[0].Kind != trace.SessionOpen || steps[0].Note != trace.PolicyExpiryOnly ||
		steps[0].Tick != 0 || steps[1].Note != trace.PolicyDefault || steps[1].Tick != int64(200*time.Millisecond) {
		t.Errorf("session steps %v", steps)
	}
}

// A request of the session's writer names every write in order, and its
// answer the request's op and path, the write that failed it and the
// nodes its creates made (a transaction's create is the caller's, not
// ours, also when it is the transaction's first op).
func TestOnBatch(t *testing.T) {
	batch := [][]any{
		{&zk.DeleteRequest{Path: "/l/a1"}},
		{&zk.CreateRequest{Path: "/l/p-"}},
		{&zk.CheckVersionRequest{Path: "/m/b2"}, &zk.CreateRequest{Path: "/data"}},
		{&zk.CreateRequest{Path: "/runs/r1"}}, // a transaction of one create (Session.Txn)
	}
	opsOf := func(i int) (bool, []any) { return i >= 2, batch[i] }
	steps := recorded(t, func() {
		trace.WritesSent(nil, len(batch), opsOf)
		trace.WritesAnswered(nil, len(batch), opsOf, []zk.MultiResponse{{}, {String: "/l/p-0000000001"}, {}, {String: "/data"}, {String: "/runs/r1"}}, nil)
		trace.WritesAnswered(nil, len(batch), opsOf, []zk.MultiResponse{{}, {}, {Error: zk.ErrNoNode}, {Error: zk.ErrAPIError}, {Error: zk.ErrAPIError}}, zk.ErrNoNode)
		trace.WritesAnswered(nil, len(batch), opsOf, nil, zk.ErrConnectionClosed)
		trace.WritesSent(nil, 1, opsOf)
	})
	writes := []trace.BatchWrite{{Op: trace.OpDelete, Path: "/l/a1"}, {Op: trace.OpCreate, Path: "/l/p-"}, {Op: trace.OpTxn, Path: "/m/b2"},
		{Op: trace.OpTxn, Path: "/runs/r1"}}
	want := []trace.Step{
		{Kind: trace.Send, Op: trace.OpMulti, Path: "/l/a1", Writes: writes},
		{Kind: trace.Answer, Op: trace.OpMulti, Path: "/l/a1", N: -1, Creates: []string{"/l/p-0000000001"}},
		{Kind: trace.Answer, Op: trace.OpMulti, Path: "/l/a1", N: 2, Out: "nonode"},
		{Kind: trace.Answer, Op: trace.OpMulti, Path: "/l/a1", N: -1, Out: "conn"},
		{Kind: trace.Send, Op: trace.OpDelete, Path: "/l/a1", Writes: writes[:1]},
	}
	if len(steps) != len(want) {
		t.Fatalf("%d steps: %v", len(steps), steps)
	}
	for i, s := range steps {
		got := trace.Step{Kind: s.Kind, Op: s.Op, Path: s.Path, N: s.N, Out: s.Out, Writes: s.Writes, Creates: s.Creates}
		if got.String() != want[i].String() {
			t.Errorf("step %d: %v, want %v", i+1, got, want[i])
		}
	}
}

// recorded returns the steps record records.
func recorded(t *testing.T, record func()) []trace.Step {
	t.Helper()
	dir := t.TempDir()
	r, err := trace.Start(dir)
	if err != nil {
		t.Fatal(err)
	}
	record()
	if err := trace.Stop(); err != nil {
		t.Fatal(err)
	}
	steps, err := trace.ReadFile(trace.FileName(dir, r.Pid()))
	if err != nil {
		t.Fatal(err)
	}
	return steps
}

// A wire's steps are its connection's process's, recorded before the
// binding or after; a nil wire binds nothing; a handshake and a touch
// carry the write time of the packet they answer; a pause step names the
// process stopped.
func TestOnWire(t *testing.T) {
	dir := t.TempDir()
	r, err := trace.Start(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, c1, c2 := new(int), &zk.Conn{}, &zk.Conn{}
	start := time.Now()
	trace.Wrote(w, 1, start, "") // the connect request, before Connect returned
	trace.SessionOpened(c1, w, false, 0)
	trace.Handshook(w, 42, 2000, start)
	trace.Touched(w, start, time.Now())
	trace.SessionOpened(c2, (*int)(nil), false, 0)
	trace.Paused(4321, start, time.Now())
	if err := trace.Stop(); err != nil {
		t.Fatal(err)
	}
	steps, err := trace.ReadFile(trace.FileName(dir, r.Pid()))
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 6 {
		t.Fatalf("%d steps: %v", len(steps), steps)
	}
	// What each step must be, its times aside (checked after).
	want := []trace.Step{
		{Kind: trace.Write, Proc: 1, N: 1},
		{Kind: trace.SessionOpen, Proc: 1, Note: trace.PolicyDefault},
		{Kind: trace.Handshake, Proc: 1, Owner: 42, Timeout: int64(2 * time.Second), Note: trace.HandshakeWire},
		{Kind: trace.Touch, Proc: 1},
		{Kind: trace.SessionOpen, Proc: 2, Note: trace.PolicyDefault},
		{Kind: trace.Pause, N: 4321},
	}
	for i, s := range steps {
		got := trace.Step{Kind: s.Kind, Proc: s.Proc, N: s.N, Owner: s.Owner, Timeout: s.Timeout, Note: s.Note}
		if got.String() != want[i].String() {
			t.Errorf("step %d: %v, want %v", i+1, s, want[i])
		}
	}
	if w, p := steps[0], steps[5]; w.At <= 0 || w.At > w.T || p.At <= 0 || p.Until < p.At {
		t.Errorf("times: write %v, pause %v", w, p)
	}
	// The handshake's and the touch's write time is the connect
	// request's; the touch was confirmed after it, by its step.
	if h, c := steps[2], steps[3]; h.At != steps[0].At || c.At != h.At || c.Until < c.At || c.Until > c.T {
		t.Errorf("times: write %v, handshake %v, touch %v", steps[0], h, c)
	}
}
