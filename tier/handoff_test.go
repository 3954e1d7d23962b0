package tier_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
)

// The bounded local hand-off (lock.go: leave, handoffAllowed, settled).

// A hand-off whose receiver's wait ends as it is granted: the receiver
// gives the gate back (the admission undoes the grant) after the giver has
// returned, with the node still the process's and nobody to release it.
// The node must go all the same, or every other process waits on it.
func TestHandoffToWaiterGivingUp(t *testing.T) {
	servers := zktest.Servers(t)
	s, obs := connect(t, servers), connect(t, servers)
	path := zktest.Path(t)
	l := newLock(t, s, path, tier.WithHandoff(10, time.Minute))
	ctx := ctxT(t, 20*time.Second)
	held, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		h, err := l.Acquire(wctx)
		if err == nil {
			_ = l.Release(h)
		}
		done <- err
	}()
	eventually(t, 5*time.Second, "a waiter at the gate", func() bool { return tier.GateWaiters(l) == 1 })
	// The waiter's context ends; before it looks whether it was granted,
	// the holder releases and hands the hold (gate and node) to it.
	tier.SetGateGaveUpHookForTest(l, func() {
		if err := l.Release(held); err != nil {
			t.Error(err)
		}
	})
	defer tier.SetGateGaveUpHookForTest(l, nil)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the waiter: %v; want its context's end", err)
	}
	eventually(t, 5*time.Second, "the node given up", func() bool { return len(children(t, obs.Conn(), path)) == 0 })
}
