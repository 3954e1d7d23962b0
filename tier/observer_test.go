package tier_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
)

// The observer's contract, which a metrics collector's gauges rest on:
// Acquiring starts every blocking acquisition and exactly one Acquired or
// Failed (Try false) follows it; a try tells no Acquiring and marks its
// outcome Try; a re-entry and a busy try tell nothing; Close tells Released
// for the hold it ends, whose Release then finds nothing.
func TestObserverEvents(t *testing.T) {
	servers := zktest.Servers(t)
	s, other := connect(t, servers), connect(t, servers)
	p := zktest.Path(t)
	var mu sync.Mutex
	var got []string
	l := newLock(t, s, p, tier.WithObserver(func(ev tier.Event) {
		mu.Lock()
		defer mu.Unlock()
		name := ev.Kind.String()
		if ev.Try {
			name += "(try)"
		}
		if ev.Path != p {
			t.Errorf("%s: path %q, want %q", name, ev.Path, p)
		}
		got = append(got, name)
	}))
	expect := func(what string, want ...string) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(got, want) {
			t.Errorf("%s: events %v, want %v", what, got, want)
		}
		got = nil
	}
	ctx := ctxT(t, 30*time.Second)

	held, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	expect("Acquire", "acquiring", "acquired")
	if _, err := l.Acquire(held); err != nil {
		t.Fatal(err)
	}
	l.Release(held)
	expect("a re-entry and its Release")
	l.Release(held)
	expect("Release", "released")

	held, ok, err := l.TryAcquire(ctx)
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	l.Release(held)
	expect("TryAcquire", "acquired(try)", "released")

	ol := newLock(t, other, p)
	oh, err := ol.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := l.TryAcquire(ctx); ok || err != nil {
		t.Fatal(ok, err)
	}
	expect("a busy TryAcquire")
	if _, _, err := l.TryAcquire(zktest.Cancelled()); err == nil {
		t.Fatal("TryAcquire with a cancelled context succeeded")
	}
	expect("a cancelled TryAcquire", "failed(try)")
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	_, err = l.Acquire(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	expect("an Acquire past its deadline", "acquiring", "failed")
	ol.Release(oh)

	held, err = l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if err := l.Release(held); !errors.Is(err, tier.ErrClosed) {
		t.Fatalf("Release after Close: %v", err)
	}
	if _, err := l.Acquire(ctx); !errors.Is(err, tier.ErrClosed) {
		t.Fatalf("Acquire after Close: %v", err)
	}
	expect("a hold ended by Close, then an Acquire", "acquiring", "acquired", "released", "acquiring", "failed")
}
