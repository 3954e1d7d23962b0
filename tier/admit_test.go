package tier

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
)

// admitWaitFor polls cond until it holds or a generous deadline passes.
func admitWaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		runtime.Gosched()
		time.Sleep(100 * time.Microsecond)
	}
}

// admitQueue starts acquire(ctx, n, closed) in a goroutine and returns
// once that goroutine is queued (waiters went up by one); the channel
// receives acquire's result.
func admitQueue(t *testing.T, a *admission, ctx context.Context, n int64, closed <-chan struct{}) <-chan error {
	t.Helper()
	before := a.waiters()
	done := make(chan error, 1)
	go func() { done <- a.acquire(ctx, n, closed) }()
	admitWaitFor(t, "the acquire is queued", func() bool { return a.waiters() == before+1 })
	return done
}

// admitResult waits for an acquire's result.
func admitResult(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: acquire still blocked", what)
		return nil
	}
}

// admitBlocked checks that an acquire has not returned.
func admitBlocked(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s: acquire returned (%v) while it should wait", what, err)
	case <-time.After(20 * time.Millisecond):
	}
}

// Goroutines blocked in acquire are served in the order they queued.
func TestAdmissionFIFO(t *testing.T) {
	a := newAdmission(1)
	if err := a.acquire(context.Background(), 1, nil); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := a.acquire(context.Background(), 1, nil); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			a.release(1)
		}()
		admitWaitFor(t, "the waiter is queued", func() bool { return a.waiters() == i+1 })
	}
	a.release(1)
	zktest.Wait(t, "the waiters", &wg)
	for i, v := range order {
		if v != i {
			t.Fatalf("served out of order: %v", order)
		}
	}
	if !a.tryAcquire(1) {
		t.Fatal("not free after every waiter released")
	}
}

// A large request at the head is not overtaken by small ones that would
// fit: the read/write gate relies on it to keep a writer (all units) from
// starving behind readers (one unit each).
func TestAdmissionWeightsHeadBlocks(t *testing.T) {
	ctx := context.Background()
	a := newAdmission(2)
	if err := a.acquire(ctx, 1, nil); err != nil {
		t.Fatal(err)
	}
	big := admitQueue(t, a, ctx, 2, nil)
	small := admitQueue(t, a, ctx, 1, nil)
	if a.tryAcquire(1) {
		t.Fatal("tryAcquire(1) overtook a queued request of 2")
	}
	if err := a.acquire(ctx, 1, admitEnded()); !errors.Is(err, ErrClosed) {
		t.Fatalf("acquire(1) overtook a queued request of 2 (err %v)", err)
	}
	admitBlocked(t, small, "one unit free, a request of 2 at the head")
	a.release(1)
	if err := admitResult(t, big, "the head, after the release"); err != nil {
		t.Fatal(err)
	}
	admitBlocked(t, small, "the head holds both units")
	a.release(2)
	if err := admitResult(t, small, "the second, after the head's release"); err != nil {
		t.Fatal(err)
	}
	a.release(1)
	if taken(a.state.Load()) != 0 || a.waiters() != 0 {
		t.Fatalf("state %#x after everything was released", a.state.Load())
	}
}

// A release grants every waiter at the head that fits, in order: a run of
// readers after a writer.
func TestAdmissionGrantsRun(t *testing.T) {
	ctx := context.Background()
	a := newAdmission(3)
	if err := a.acquire(ctx, 3, nil); err != nil { // the writer
		t.Fatal(err)
	}
	r1 := admitQueue(t, a, ctx, 1, nil)
	r2 := admitQueue(t, a, ctx, 1, nil)
	w := admitQueue(t, a, ctx, 3, nil)
	r3 := admitQueue(t, a, ctx, 1, nil)
	a.release(3)
	for _, r := range []<-chan error{r1, r2} {
		if err := admitResult(t, r, "a reader after the writer"); err != nil {
			t.Fatal(err)
		}
	}
	admitBlocked(t, w, "readers hold")
	admitBlocked(t, r3, "a writer queued before it")
	a.release(1)
	a.release(1)
	if err := admitResult(t, w, "the writer after the readers"); err != nil {
		t.Fatal(err)
	}
	a.release(3)
	if err := admitResult(t, r3, "the last reader"); err != nil {
		t.Fatal(err)
	}
	a.release(1)
}

// The head giving up must grant the ones behind it that fit: one unit is
// free, the request of 2 at the head leaves, the request of 1 behind it
// goes although nobody releases anything (x/sync's
// TestAllocCancelDoesntStarve: here the holder of the other unit is the
// waiter itself, so without that grant it would wait for ever).
func TestAdmissionHeadGivingUpGrantsBehind(t *testing.T) {
	a := newAdmission(2)
	if err := a.acquire(context.Background(), 1, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	big := admitQueue(t, a, ctx, 2, nil)
	small := admitQueue(t, a, context.Background(), 1, nil)
	cancel()
	if err := admitResult(t, big, "the cancelled head"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled head: %v", err)
	}
	if err := admitResult(t, small, "the waiter behind a head that gave up"); err != nil {
		t.Fatal(err)
	}
	a.release(1)
	a.release(1)
	if !a.tryAcquire(2) {
		t.Fatal("units lost")
	}
}

// tryAcquire never blocks: it does not take mu, so it returns even while
// mu is held; it fails while anyone is queued or the units are taken.
func TestAdmissionTryAcquireNeverBlocks(t *testing.T) {
	a := newAdmission(2)
	try := func(n int64) bool {
		t.Helper()
		got := make(chan bool, 1)
		a.mu.Lock()
		go func() { got <- a.tryAcquire(n) }()
		defer a.mu.Unlock()
		select {
		case ok := <-got:
			return ok
		case <-time.After(10 * time.Second):
			t.Fatal("tryAcquire blocked on mu")
			return false
		}
	}
	if !try(1) || !try(1) {
		t.Fatal("tryAcquire failed on free units")
	}
	if try(1) {
		t.Fatal("tryAcquire took a unit that was not free")
	}
	a.release(1)
	done := admitQueue(t, a, context.Background(), 2, nil)
	if try(1) {
		t.Fatal("tryAcquire overtook a waiter")
	}
	a.release(1)
	if err := admitResult(t, done, "the waiter"); err != nil {
		t.Fatal(err)
	}
	a.release(2)
	if !try(2) {
		t.Fatal("tryAcquire failed on a free admission")
	}
}

// An abandoned wait (deadline, cancel, closed) returns its cause and
// leaves the admission as it was.
func TestAdmissionGiveUp(t *testing.T) {
	a := newAdmission(1)
	if !a.tryAcquire(1) {
		t.Fatal("fresh admission taken")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := a.acquire(ctx, 1, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire past deadline: %v", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	done := admitQueue(t, a, ctx, 1, nil)
	cancel()
	if err := admitResult(t, done, "cancelled"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled acquire: %v", err)
	}
	if err := a.acquire(context.Background(), 1, admitEnded()); !errors.Is(err, ErrClosed) {
		t.Fatalf("acquire with closed closed: %v", err)
	}
	closed := make(chan struct{})
	done = admitQueue(t, a, context.Background(), 1, closed)
	close(closed)
	if err := admitResult(t, done, "closed while queued"); !errors.Is(err, ErrClosed) {
		t.Fatalf("acquire closed while queued: %v", err)
	}
	if a.tryAcquire(1) || a.waiters() != 0 || a.head != nil {
		t.Fatal("abandoned waits changed the admission")
	}
	a.release(1)
	if !a.tryAcquire(1) {
		t.Fatal("not free")
	}
}

// Free units are taken even if ctx has already ended: ctx bounds the
// wait only (the callers check their contexts themselves).
func TestAdmissionFreeUnitsIgnoreEndedContext(t *testing.T) {
	a := newAdmission(1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := a.acquire(ctx, 1, admitEnded()); err != nil {
		t.Fatalf("free unit refused: %v", err)
	}
	a.release(1)
}

// Out-of-range sizes and counts are programming errors: they panic.
func TestAdmissionBadUnits(t *testing.T) {
	a := newAdmission(2)
	for name, f := range map[string]func(){
		"size 0":           func() { newAdmission(0) },
		"size over 2^31-1": func() { newAdmission(1 << 31) },
		"acquire 0":        func() { _ = a.acquire(context.Background(), 0, nil) },
		"acquire 3 of 2":   func() { _ = a.acquire(context.Background(), 3, nil) },
		"try 3 of 2":       func() { a.tryAcquire(3) },
		"release untaken":  func() { a.release(1) },
		"handOff 0":        func() { a.handOff(0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func admitEnded() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// admitContenders runs body on 8 goroutines (GOMAXPROCS x parallelism).
func admitContenders(b *testing.B, body func(*testing.PB)) {
	p := runtime.GOMAXPROCS(0)
	b.SetParallelism(max(1, 8/p))
	b.RunParallel(body)
}
