package tier_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// Through tier, the position is the process's node's: the goroutine past
// the gate is told its place behind another process's holder, and a
// goroutine waiting at the gate behind it is told nothing until it passes
// the gate and queues a node of its own.
func TestPositionThroughGate(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	ctx := ctxT(t, 30*time.Second)
	so := connect(t, servers)
	other := newLock(t, so, p)
	otherHeld, err := other.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []zklock.Position
	reports := func() []zklock.Position {
		mu.Lock()
		defer mu.Unlock()
		return append([]zklock.Position(nil), got...)
	}
	l := newLock(t, connect(t, servers), p, tier.WithPositionHandler(func(pos zklock.Position) {
		mu.Lock()
		got = append(got, pos)
		mu.Unlock()
	}))
	first := make(chan context.Context, 1)
	go func() {
		held, err := l.Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		first <- held
	}()
	eventually(t, 10*time.Second, "the first goroutine queued", func() bool { return len(reports()) == 1 })
	second := make(chan context.Context, 1)
	go func() {
		held, err := l.Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		second <- held
	}()
	eventually(t, 10*time.Second, "the second goroutine at the gate", func() bool {
		return tier.GateWaiters(l) == 1
	})
	if n := len(children(t, so.Conn(), p)); n != 2 {
		t.Fatalf("%d nodes queued, want 2: one a process", n)
	}
	if r := reports(); len(r) != 1 || r[0].Ahead != 1 || r[0].Leads {
		t.Fatalf("reports %+v, want one: 1 ahead", r)
	}
	if err := other.Release(otherHeld); err != nil {
		t.Fatal(err)
	}
	held := <-first
	if held == nil {
		t.FailNow()
	}
	r := reports()
	if len(r) != 2 || !r[1].Leads || r[1].Node != r[0].Node {
		t.Fatalf("reports %+v, want 1 ahead then leads, same node", r)
	}
	if err := l.Release(held); err != nil {
		t.Fatal(err)
	}
	held = <-second
	if held == nil {
		t.FailNow()
	}
	r = reports()
	if len(r) != 3 || !r[2].Leads || r[2].Ahead != 0 || r[2].Node == r[1].Node {
		t.Fatalf("reports %+v, want the second goroutine's own node, leading", r)
	}
	if err := l.Release(held); err != nil {
		t.Fatal(err)
	}
}
