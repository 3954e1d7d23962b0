package tier_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
)

func newRegistry(t *testing.T, opts ...tier.Option) *tier.Registry {
	t.Helper()
	r, err := tier.NewRegistry(connect(t, zktest.Servers(t)), zktest.Path(t), append([]tier.Option{tier.WithLogger(quietLog)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestRegistryShares(t *testing.T) {
	r := newRegistry(t)
	a, err := r.Obtain("job-1")
	if err != nil {
		t.Fatal(err)
	}
	held, err := a.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.Obtain("job-1")
	c, _ := r.Obtain("job-2")
	if a != b || a == c {
		t.Fatal("Obtain does not share one lock per key")
	}
	if _, ok, _ := b.TryAcquire(context.Background()); ok {
		t.Fatal("second caller got a held key")
	}
	if err := a.Release(held); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"", "a/b", ".", "..", "x\x00"} {
		if _, err := r.Obtain(k); !errors.Is(err, tier.ErrInvalidPath) {
			t.Errorf("Obtain(%q): %v, want ErrInvalidPath", k, err)
		}
	}
}

// Idle locks are dropped: after many distinct keys the registry is empty,
// and a lock kept past its drop still works.
func TestRegistryDropsIdle(t *testing.T) {
	r := newRegistry(t)
	ctx := ctxT(t, 30*time.Second)
	kept, _ := r.Obtain("kept")
	h, err := kept.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Len() != 1 {
		t.Fatalf("Len = %d while held", r.Len())
	}
	kept.Release(h)
	for i := 0; i < 50; i++ {
		l, err := r.Obtain(fmt.Sprintf("key-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(h); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.Len(); n != 0 {
		t.Fatalf("%d idle locks kept", n)
	}
	// The dropped lock forwards to the registry's current lock for its key.
	h, err = kept.Acquire(ctx)
	if err != nil {
		t.Fatalf("dropped lock: %v", err)
	}
	if kept.HoldCount(h) != 1 {
		t.Fatal("HoldCount not forwarded from the dropped lock")
	}
	if tok, err := kept.Token(h); err != nil || tok <= 0 {
		t.Fatalf("Token not forwarded from the dropped lock: %d, %v", tok, err)
	}
	cur, _ := r.Obtain("kept")
	if cur.HoldCount(h) != 1 {
		t.Fatal("dropped lock's hold is not the registry's")
	}
	if _, ok, _ := cur.TryAcquire(context.Background()); ok {
		t.Fatal("the key was acquired twice")
	}
	if err := kept.Release(h); err != nil {
		t.Fatal(err)
	}
}

func TestRegistryExclusionPerKey(t *testing.T) {
	r := newRegistry(t)
	ctx := ctxT(t, 60*time.Second)
	const keys = 4
	var inside [keys]atomic.Int32
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				k := (g + i) % keys
				l, err := r.Obtain(fmt.Sprintf("k%d", k))
				if err != nil {
					t.Error(err)
					return
				}
				h, err := l.Acquire(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if inside[k].Add(1) != 1 {
					t.Errorf("key %d held twice", k)
				}
				time.Sleep(time.Millisecond)
				inside[k].Add(-1)
				if err := l.Release(h); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if r.Len() != 0 {
		t.Fatalf("%d locks left after all released", r.Len())
	}
}

func TestLocker(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	l := newLock(t, s, zktest.Path(t))
	mu := l.Locker()
	mu.Unlock() // Unlock without Lock: logged, no panic, nothing changed
	var inside atomic.Int32
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				mu.Lock()
				if inside.Add(1) != 1 {
					t.Error("two holders through the Locker")
				}
				inside.Add(-1)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if _, ok, _ := l.TryAcquire(context.Background()); !ok {
		t.Fatal("lock not free after the Locker's last Unlock")
	}
}
