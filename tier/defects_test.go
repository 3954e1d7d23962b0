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

// The registry's memory stays bounded for any sequence of calls: keys
// tried and refused, acquired and released, or acquired past a deadline
// leave no lock behind. Before: a lock obtained and never acquired stayed
// for ever, and calls with a stale context on a dropped lock made new ones.
func TestRegistryMemoryBounded(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	r, err := tier.NewRegistry(s, zktest.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := ctxT(t, 30*time.Second)
	held, err := r.Acquire(ctx, "busy")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		if _, ok, err := r.TryAcquire(ctx, "busy"); ok || err != nil {
			t.Fatalf("TryAcquire of a held key: %v, %v", ok, err)
		}
		h, err := r.Acquire(ctx, fmt.Sprintf("job-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Release(h); err != nil {
			t.Fatal(err)
		}
		// Stale context: calls change nothing and make nothing.
		if err := r.Release(h); !errors.Is(err, tier.ErrNotHolder) {
			t.Fatalf("second Release = %v, want ErrNotHolder", err)
		}
		if _, err := r.Token(h); !errors.Is(err, tier.ErrNotHolder) {
			t.Fatalf("Token after release = %v, want ErrNotHolder", err)
		}
		_ = r.HoldCount(h)
	}
	if n := r.Len(); n != 1 {
		t.Fatalf("registry keeps %d locks with one key held", n)
	}
	if err := r.Release(held); err != nil {
		t.Fatal(err)
	}
	if n := r.Len(); n != 0 {
		t.Fatalf("registry keeps %d locks with nothing held", n)
	}
}

// A loss of the node between zklock's grant and the publication of the
// local hold (onZKLost finds no current hold to cancel) still ends the
// hold: Acquire returns a held context already cancelled with the loss.
// The hook deletes the node of a revocable lock (whose own-node watch is
// armed at once) and waits until the loss is told, just before the hold
// is published.
func TestLossBeforePublishEndsHold(t *testing.T) {
	servers := zktest.Servers(t)
	s, admin := connect(t, servers), connect(t, servers)
	p := zktest.Path(t)
	l := newLock(t, s, p, tier.WithRevocable())
	tier.SetPublishHookForTest(func(zh *zklock.Hold) {
		if err := admin.Conn().Delete(zh.Node(), -1); err != nil {
			t.Error(err)
		}
		select {
		case <-zh.Lost():
		case <-time.After(5 * time.Second):
			t.Error("the node's deletion was not told")
		}
	})
	defer tier.SetPublishHookForTest(nil)
	held, err := l.Acquire(ctxT(t, 10*time.Second))
	tier.SetPublishHookForTest(nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.Done():
		if c := context.Cause(held); !errors.Is(c, tier.ErrLockLost) || !errors.Is(c, zklock.ErrNodeDeleted) {
			t.Errorf("cause %v; want ErrLockLost wrapping ErrNodeDeleted", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a hold whose node was lost before it was published is live")
	}
	if err := l.Release(held); !errors.Is(err, tier.ErrLockLost) {
		t.Errorf("Release: %v; want ErrLockLost", err)
	}
}
