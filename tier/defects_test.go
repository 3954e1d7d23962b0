package tier_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// Regression tests for issue 9's smaller defects in tier.

// The sync.Locker adapter no longer hides a loss: the holder can see it
// through Context and Err. Before: the held context was discarded, and a
// lost holder had no way to learn of it.
func TestLockerReportsLoss(t *testing.T) {
	servers := zktest.Servers(t)
	s := connect(t, servers)
	admin := connect(t, servers)
	p := zktest.Path(t)
	l := newLock(t, s, p)
	k := l.Locker()
	if err := k.Err(); !errors.Is(err, tier.ErrNotHolder) {
		t.Fatalf("Err outside a hold = %v, want ErrNotHolder", err)
	}
	k.Lock()
	if err := k.Err(); err != nil {
		t.Fatalf("Err while held = %v", err)
	}
	kids := children(t, admin.Conn(), p)
	if len(kids) != 1 {
		t.Fatalf("%d nodes, want 1", len(kids))
	}
	if err := admin.Conn().Delete(p+"/"+kids[0], -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-k.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Locker's context not cancelled when the node was deleted")
	}
	if err := k.Err(); !errors.Is(err, tier.ErrLockLost) || !errors.Is(err, zklock.ErrNodeDeleted) {
		t.Fatalf("Err after loss = %v, want ErrLockLost wrapping ErrNodeDeleted", err)
	}
	k.Unlock()
	if k.Context().Err() == nil {
		t.Fatal("Context outside a hold is not cancelled")
	}
}

// A context derived from a held one carries the hold: it re-enters, and
// can release, from any goroutine. That is the documented rule (the hold
// belongs to the context, not to a goroutine); this test pins it down.
func TestDerivedContextCarriesHold(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	l := newLock(t, s, zktest.Path(t))
	held, err := l.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	derived, cancel := context.WithCancel(held)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		again, err := l.Acquire(derived) // another goroutine, a derived context
		if err == nil && l.HoldCount(again) != 2 {
			err = fmt.Errorf("count %d after re-entry, want 2", l.HoldCount(again))
		}
		if err == nil {
			err = l.Release(again)
		}
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := l.Release(held); err != nil {
		t.Fatal(err)
	}
}

// The registry's memory stays bounded when locks are obtained and never
// acquired. Before: every such lock stayed in the map forever.
func TestRegistryObtainWithoutAcquireIsBounded(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	r, err := tier.NewRegistry(s, zktest.Path(t), tier.WithLogger(quietLog))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := 0; i < 5000; i++ {
		if _, err := r.Obtain(fmt.Sprintf("job-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.Len(); n > 200 {
		t.Fatalf("registry keeps %d locks after 5000 obtained and never used", n)
	}
	// A lock swept while its caller still had it still works.
	l, err := r.Obtain("job-kept")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		if _, err := r.Obtain(fmt.Sprintf("more-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	held, err := l.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatalf("Acquire on a swept lock: %v", err)
	}
	if err := l.Release(held); err != nil {
		t.Fatal(err)
	}
}

// Calls with a stale context on a retired registry lock do not create
// locks that nobody retires. Before: each such call created one.
func TestRegistryRetiredLockCreatesNothing(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	r, err := tier.NewRegistry(s, zktest.Path(t), tier.WithLogger(quietLog))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l, err := r.Obtain("k")
	if err != nil {
		t.Fatal(err)
	}
	held, err := l.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(held); err != nil {
		t.Fatal(err)
	}
	if r.Len() != 0 {
		t.Fatalf("idle lock kept: %d", r.Len())
	}
	if err := l.Release(held); !errors.Is(err, tier.ErrNotHolder) {
		t.Fatalf("second Release = %v, want ErrNotHolder", err)
	}
	if _, err := l.Token(held); !errors.Is(err, tier.ErrNotHolder) {
		t.Fatalf("Token after release = %v, want ErrNotHolder", err)
	}
	_ = l.HoldCount(held)
	if n := r.Len(); n != 0 {
		t.Fatalf("calls on a retired lock created %d lock(s)", n)
	}
}
