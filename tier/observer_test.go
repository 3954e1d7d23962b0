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

// recipeEvents records an observer's events by name, for the recipes' tests.
type recipeEvents struct {
	mu  sync.Mutex
	got []string
}

func (l *recipeEvents) observe(ev tier.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	name := ev.Kind.String()
	if ev.Kind == tier.Acquired {
		name += "/" + ev.Tier.String()
	}
	l.got = append(l.got, name)
}

func (l *recipeEvents) expect(t *testing.T, what string, want ...string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !slices.Equal(l.got, want) {
		t.Errorf("%s: events %v, want %v", what, l.got, want)
	}
	l.got = nil
}

// Every tier constructor takes tier.Option (issue 30): an observer, and so
// lockmetrics, reaches the read/write lock and the semaphore, with the
// Lock's contract (Acquiring, then one Acquired or Failed; Released when a
// hold ends; re-entries tell nothing). A reader riding the process's read
// node is acquired at TierHandoff. Before, NewRWLock and NewSemaphore took
// zklock options only, and told nobody anything.
func TestRecipeObserverEvents(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	ctx := ctxT(t, 30*time.Second)
	var log recipeEvents
	rw := newRW(t, s, zktest.Path(t), tier.WithObserver(log.observe))
	w, err := rw.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rw.RLock(w) // a read under our own write hold
	if err != nil {
		t.Fatal(err)
	}
	rw.Release(r)
	rw.Release(w)
	log.expect(t, "write, read under it", "acquiring", "acquired/zookeeper", "acquired/handoff", "released", "released")
	r1, err := rw.RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := rw.RLock(ctx) // rides the read node
	if err != nil {
		t.Fatal(err)
	}
	rw.Release(r1)
	rw.Release(r2)
	log.expect(t, "two readers", "acquiring", "acquired/zookeeper", "acquiring", "acquired/handoff", "released", "released")

	sem := newSem(t, s, zktest.Path(t), 2, tier.WithObserver(log.observe))
	h, err := sem.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := sem.TryAcquire(zktest.Cancelled(), 1); err == nil {
		t.Fatal("TryAcquire with a cancelled context succeeded")
	}
	sem.Release(h)
	log.expect(t, "semaphore", "acquiring", "acquired/zookeeper", "failed", "released")
}

// WithHandoff and WithRevocable are a Lock's: the recipes refuse them
// rather than ignore them.
func TestRecipesRefuseLockOnlyOptions(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	for _, opt := range []tier.Option{tier.WithHandoff(2, time.Second), tier.WithRevocable()} {
		if _, err := tier.NewRWLock(s, zktest.Path(t), opt); !errors.Is(err, tier.ErrInvalidOption) {
			t.Errorf("NewRWLock: %v, want ErrInvalidOption", err)
		}
		if _, err := tier.NewSemaphore(s, zktest.Path(t), 2, opt); !errors.Is(err, tier.ErrInvalidOption) {
			t.Errorf("NewSemaphore: %v, want ErrInvalidOption", err)
		}
	}
}
