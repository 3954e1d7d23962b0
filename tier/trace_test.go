//go:build tierlocktrace

package tier_test

import (
	"slices"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
)

// gateKinds are the steps of the gate (but gate_pass), and the release.
var gateKinds = map[trace.Kind]bool{trace.GateEnter: true, trace.Handoff: true, trace.Release: true, trace.GateLeave: true}

// The gate's steps, with the tierlocktrace tag (go test -tags
// tierlocktrace -run TestTrace ./tier/): a holder enters the gate, a local
// waiter queues behind it, the release passes gate and node to the waiter
// (gate_pass; the waiter's gate_enter, then handoff: it rides the node with
// no ZooKeeper request), whose release gives the node and the gate up.
func TestTraceGateHandoff(t *testing.T) {
	r, err := trace.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = trace.Stop() })
	s := connect(t, zktest.Servers(t))
	p := zktest.Path(t)
	l := newLock(t, s, p, tier.WithHandoff(10, time.Minute))
	ctx := ctxT(t, 20*time.Second)
	held, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		h, err := l.Acquire(ctx)
		if err == nil {
			err = l.Release(h)
		}
		done <- err
	}()
	eventually(t, 5*time.Second, "a waiter at the gate", func() bool { return tier.GateWaiters(l) == 1 })
	if err := l.Release(held); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	steps, err := trace.ReadFile(r.FileName())
	if err != nil {
		t.Fatal(err)
	}
	var kinds []trace.Kind
	creates, passes := 0, 0
	for _, st := range steps {
		switch {
		case st.Kind == trace.Answer && st.Out == "" && len(st.Creates) > 0:
			creates += len(st.Creates) // the session's writer's answer names the nodes its creates made
		case st.Path == p && st.Kind == trace.GatePass:
			// Recorded once handOff returned: the receiver may have
			// recorded any of its steps first.
			passes++
		case st.Path == p && gateKinds[st.Kind]:
			kinds = append(kinds, st.Kind)
		}
	}
	want := []trace.Kind{trace.GateEnter, trace.GateEnter, trace.Handoff, trace.Release, trace.GateLeave}
	if !slices.Equal(kinds, want) || passes != 1 {
		t.Errorf("gate steps %v and %d gate_pass, want %v and 1", kinds, passes, want)
	}
	if creates != 1 {
		t.Errorf("%d nodes created: the hand-off made one", creates)
	}
}
