package tier_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
)

func newRegistry(t *testing.T, opts ...tier.Option) *tier.Registry {
	t.Helper()
	r, err := tier.NewRegistry(connect(t, zktest.Servers(t)), zktest.Path(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// One lock per key: a held key cannot be taken again by another caller,
// another key can; re-entry with the held context counts; bad keys are
// refused.
func TestRegistryShares(t *testing.T) {
	r := newRegistry(t)
	ctx := ctxT(t, 10*time.Second)
	held, err := r.Acquire(ctx, "job-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := r.TryAcquire(context.Background(), "job-1"); ok {
		t.Fatal("second caller got a held key")
	}
	other, ok, err := r.TryAcquire(context.Background(), "job-2")
	if !ok || err != nil {
		t.Fatalf("another key: %v, %v", ok, err)
	}
	again, err := r.Acquire(held, "job-1")
	if err != nil || r.HoldCount(again) != 2 {
		t.Fatalf("re-entry: %v, count %d", err, r.HoldCount(again))
	}
	if tok, err := r.Token(held); err != nil || tok <= 0 {
		t.Fatalf("Token = %d, %v", tok, err)
	}
	for _, h := range []context.Context{again, held, other} {
		if err := r.Release(h); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Release(held); !errors.Is(err, tier.ErrNotHolder) {
		t.Fatalf("release once too often: %v, want ErrNotHolder", err)
	}
	if err := r.Release(context.Background()); !errors.Is(err, tier.ErrNotHolder) {
		t.Fatalf("release with a bare context: %v, want ErrNotHolder", err)
	}
	for _, k := range []string{"", "a/b", ".", "..", "x\x00"} {
		if _, err := r.Acquire(ctx, k); !errors.Is(err, tier.ErrInvalidPath) {
			t.Errorf("Acquire(%q): %v, want ErrInvalidPath", k, err)
		}
	}
	if n := r.Len(); n != 0 {
		t.Fatalf("%d locks kept after every hold was released", n)
	}
}

// The registry keeps a key's lock exactly while it is being acquired or
// held: after many distinct keys it is empty, and a failed or cancelled
// acquisition leaves nothing either.
func TestRegistryDropsIdle(t *testing.T) {
	r := newRegistry(t)
	ctx := ctxT(t, 30*time.Second)
	kept, err := r.Acquire(ctx, "kept")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		h, err := r.Acquire(ctx, fmt.Sprintf("key-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Release(h); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.Len(); n != 1 {
		t.Fatalf("Len = %d with one key held", n)
	}
	// A wait that gives up leaves nothing behind.
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := r.Acquire(short, "kept"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire of a held key past its deadline: %v", err)
	}
	if n := r.Len(); n != 1 {
		t.Fatalf("Len = %d after a cancelled wait", n)
	}
	if err := r.Release(kept); err != nil {
		t.Fatal(err)
	}
	if n := r.Len(); n != 0 {
		t.Fatalf("%d idle locks kept", n)
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
				h, err := r.Acquire(ctx, fmt.Sprintf("k%d", k))
				if err != nil {
					t.Error(err)
					return
				}
				if inside[k].Add(1) != 1 {
					t.Errorf("key %d held twice", k)
				}
				time.Sleep(time.Millisecond)
				inside[k].Add(-1)
				if err := r.Release(h); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	zktest.Wait(t, "the goroutines", &wg)
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
	zktest.Wait(t, "the Locker's users", &wg)
	if _, ok, _ := l.TryAcquire(context.Background()); !ok {
		t.Fatal("lock not free after the Locker's last Unlock")
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

// Issue 21, item 4: a registry key too large for the server is refused
// before anything is sent, and the session's other holds live on.
func TestRegistryOversizedKeyRefused(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	ctx := ctxT(t, 20*time.Second)
	other := newLock(t, s, zktest.Path(t)+"/other")
	held, err := other.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := tier.NewRegistry(s, zktest.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Acquire(ctx, strings.Repeat("k", 1100<<10)); !errors.Is(err, tier.ErrInvalidPath) {
		t.Errorf("a 1.1 MB key: %v; want ErrInvalidPath", err)
	}
	if held.Err() != nil {
		t.Errorf("the session's other hold was lost: %v", context.Cause(held))
	}
	if err := other.Release(held); err != nil {
		t.Error(err)
	}
}
