package mutexbool_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/mutexbool"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitTimeout bounds how long a test waits for something that must happen;
// it only catches hangs and is never used to judge speed.
const waitTimeout = 10 * time.Second

// assertBlocked checks that a Get on m does not return before a short
// deadline.
func assertBlocked(t *testing.T, m *mutexbool.BooleanMutex) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := m.Get(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get on a false mutex = %v, want %v", err, context.DeadlineExceeded)
	}
}

// assertOpen checks that a Get on m returns nil even with a context that is
// already cancelled, i.e. without waiting.
func assertOpen(t *testing.T, m *mutexbool.BooleanMutex) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Get(ctx); err != nil {
		t.Fatalf("Get on a true mutex = %v, want nil", err)
	}
}

// startWaiters starts n goroutines blocked in m.Get and returns the channel
// on which each reports its result.
func startWaiters(ctx context.Context, m *mutexbool.BooleanMutex, n int) <-chan error {
	res := make(chan error, n)
	for range n {
		go func() { res <- m.Get(ctx) }()
	}
	return res
}

// collect receives n results from res, failing on a hang or a non-nil error.
func collect(t *testing.T, res <-chan error, n int) {
	t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for i := range n {
		select {
		case err := <-res:
			if err != nil {
				t.Fatalf("waiter %d: Get = %v, want nil", i, err)
			}
		case <-timer.C:
			t.Fatalf("only %d of %d waiters returned", i, n)
		}
	}
}

func TestNew(t *testing.T) {
	m := mutexbool.New(true)
	if !m.State() {
		t.Fatal("New(true).State() = false")
	}
	assertOpen(t, m)

	m = mutexbool.New(false)
	if m.State() {
		t.Fatal("New(false).State() = true")
	}
	assertBlocked(t, m)
}

func TestZeroValue(t *testing.T) {
	var m mutexbool.BooleanMutex
	if m.State() {
		t.Fatal("zero value State() = true")
	}
	assertBlocked(t, &m)
	m.Set(true)
	if !m.State() {
		t.Fatal("State() = false after Set(true)")
	}
	assertOpen(t, &m)
}

func TestNilReceiver(t *testing.T) {
	var m *mutexbool.BooleanMutex
	m.Set(true)
	if m.State() {
		t.Fatal("nil State() = true")
	}
	if err := m.Get(context.Background()); !errors.Is(err, mutexbool.ErrNil) {
		t.Fatalf("nil Get = %v, want ErrNil", err)
	}
}

func TestSetIdempotent(t *testing.T) {
	m := mutexbool.New(false)
	res := startWaiters(context.Background(), m, 3)
	m.Set(false)
	m.Set(true)
	m.Set(true) // must not close the wake-up channel twice
	collect(t, res, 3)
	assertOpen(t, m)
	m.Set(false)
	m.Set(false)
	assertBlocked(t, m)
}

func TestSetTrueReleasesAllWaiters(t *testing.T) {
	const n = 100
	m := mutexbool.New(false)
	res := startWaiters(context.Background(), m, n)

	select {
	case err := <-res:
		t.Fatalf("a waiter returned %v before Set(true)", err)
	case <-time.After(20 * time.Millisecond):
	}
	m.Set(true)
	collect(t, res, n)
}

func TestSetFalseBlocksNewWaitersOnly(t *testing.T) {
	m := mutexbool.New(false)
	res := startWaiters(context.Background(), m, 10)
	m.Set(true)
	collect(t, res, 10)

	m.Set(false)
	if m.State() {
		t.Fatal("State() = true after Set(false)")
	}
	assertBlocked(t, m)

	// A waiter started now stays blocked until the next Set(true).
	res = startWaiters(context.Background(), m, 1)
	select {
	case err := <-res:
		t.Fatalf("Get returned %v while false", err)
	case <-time.After(20 * time.Millisecond):
	}
	m.Set(true)
	collect(t, res, 1)
}

func TestCancel(t *testing.T) {
	m := mutexbool.New(false)
	ctx, cancel := context.WithCancel(context.Background())
	res := startWaiters(ctx, m, 5)
	cancel()
	for range 5 {
		if err := <-res; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Get = %v, want %v", err, context.Canceled)
		}
	}
	if m.State() {
		t.Fatal("State() = true after cancelled waiters")
	}
}

func TestDeadline(t *testing.T) {
	m := mutexbool.New(false)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := m.Get(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get = %v, want %v", err, context.DeadlineExceeded)
	}
}

func TestCancelledWaiterKeepsLaterWakeups(t *testing.T) {
	m := mutexbool.New(false)
	stay := startWaiters(context.Background(), m, 3)

	ctx, cancel := context.WithCancel(context.Background())
	gone := startWaiters(ctx, m, 3)
	cancel()
	for range 3 {
		if err := <-gone; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Get = %v, want %v", err, context.Canceled)
		}
	}

	later := startWaiters(context.Background(), m, 3)
	m.Set(true)
	collect(t, stay, 3)
	collect(t, later, 3)
}

// TestStorm hammers every method from many goroutines; run it with -race.
func TestStorm(t *testing.T) {
	const (
		setters = 8
		getters = 32
		rounds  = 500
	)
	m := mutexbool.New(false)
	var setWG, getWG sync.WaitGroup

	for i := range setters {
		setWG.Add(1)
		go func() {
			defer setWG.Done()
			for j := range rounds {
				m.Set((i+j)%2 == 0)
				_ = m.State()
			}
		}()
	}

	errs := make(chan error, getters)
	for range getters {
		getWG.Add(1)
		go func() {
			defer getWG.Done()
			for range rounds {
				ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
				err := m.Get(ctx)
				cancel()
				if err != nil && !errors.Is(err, context.DeadlineExceeded) {
					errs <- err
					return
				}
				_ = m.State()
			}
			// After the storm the mutex ends true, so this must return.
			errs <- m.Get(context.Background())
		}()
	}

	zktest.Wait(t, "the setters", &setWG)
	m.Set(true)
	if !m.State() {
		t.Fatal("State() = false after final Set(true)")
	}
	collect(t, errs, getters)
	zktest.Wait(t, "the getters", &getWG)
}

// Done is closed by Set(true), at once when already true, and a channel
// taken in one false period is not closed by a later Set(false).
func TestDone(t *testing.T) {
	m := mutexbool.New(false)
	ch := m.Done()
	select {
	case <-ch:
		t.Fatal("Done closed while false")
	default:
	}
	m.Set(false)
	go m.Set(true)
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed by Set(true)")
	}
	select {
	case <-m.Done():
	default:
		t.Fatal("Done not closed while true")
	}
	m.Set(false)
	select {
	case <-m.Done():
		t.Fatal("a new Done closed after Set(false)")
	default:
	}
	var nilM *mutexbool.BooleanMutex
	if nilM.Done() != nil {
		t.Fatal("nil BooleanMutex: Done is not nil (a never-ready channel)")
	}
}
