package session

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The bound on requests in flight (flight.go): in order, a pair admitted
// together, a waiter that gives up leaves no place taken.
func TestInflightOrder(t *testing.T) {
	f := &Flight{limit: 4}
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if err := f.acquire(ctx, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	admitted := make(chan string, 3)
	wait := func(name string, k int, ctx context.Context) {
		go func() {
			if err := f.acquire(ctx, k, nil); err != nil {
				admitted <- name + ": " + err.Error()
				return
			}
			admitted <- name
		}()
	}
	queued := func(n int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			f.mu.Lock()
			l := len(f.queue)
			f.mu.Unlock()
			if l == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d waiting; want %d", l, n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	wait("pair", 2, ctx) // one place free: the pair waits
	queued(1)
	gone, cancel := context.WithCancel(ctx)
	wait("quitter", 1, gone)
	queued(2)
	wait("single", 1, ctx) // a place would be free after a release, but the pair is ahead
	queued(3)
	cancel()
	if got := <-admitted; got != "quitter: context canceled" {
		t.Fatalf("got %q; want the quitter to give up", got)
	}
	queued(2)
	f.GiveBack() // two places free: the pair goes, the single still waits
	if got := <-admitted; got != "pair" {
		t.Fatalf("got %q; want pair", got)
	}
	select {
	case got := <-admitted:
		t.Fatalf("%q admitted past the bound", got)
	default:
	}
	f.GiveBack()
	if got := <-admitted; got != "single" {
		t.Fatalf("got %q; want single", got)
	}
	if f.n != 4 {
		t.Errorf("%d places taken; want 4", f.n)
	}

	quit := make(chan struct{})
	close(quit)
	if err := f.acquire(ctx, 1, quit); !errors.Is(err, ErrClosed) {
		t.Errorf("acquire on a full bound of a closed session: %v; want ErrClosed", err)
	}
}

// The bound adapts: a slow round trip cuts it by a quarter (once per round
// trip, never below minInflight), a fast one while it is full raises it by
// one (never above maxInflight), a fast one below it changes nothing.
func TestInflightAdapts(t *testing.T) {
	const target = 10 * time.Millisecond
	f := &Flight{limit: 256, n: 10}
	f.release(time.Second, target)
	if f.limit != 192 {
		t.Fatalf("after a slow round trip: %d; want 192", f.limit)
	}
	f.release(time.Second, target)
	if f.limit != 192 {
		t.Fatalf("cut twice within one round trip: %d", f.limit)
	}
	f.cutAt = time.Now().Add(-2 * time.Second)
	f.release(time.Second, target)
	if f.limit != 144 {
		t.Fatalf("after a second slow round trip: %d; want 144", f.limit)
	}
	f.release(time.Millisecond, target) // fast, not full
	if f.limit != 144 {
		t.Fatalf("raised while not full: %d", f.limit)
	}
	f.n = f.limit
	f.release(time.Millisecond, target)
	if f.limit != 145 {
		t.Fatalf("fast while full: %d; want 145", f.limit)
	}

	f = &Flight{limit: minInflight, n: minInflight}
	f.release(time.Second, target)
	if f.limit != minInflight {
		t.Errorf("cut below the floor: %d", f.limit)
	}
	f = &Flight{limit: maxInflight, n: maxInflight}
	f.release(time.Millisecond, target)
	if f.limit != maxInflight {
		t.Errorf("raised above the ceiling: %d", f.limit)
	}
}
