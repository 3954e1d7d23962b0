package tier

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A waiter whose context ends while leave hands it the gate must either
// take the gate (and pass it on) or leave the queue before it is chosen:
// the gate must never end up held by no goroutine. The hook cancels the
// waiter between leave choosing it and handing it over, and gives the
// waiter time to act in that window. With the close after mu's unlock
// (the bug), the waiter returned ctx.Err() inside the window and the gate
// stayed held forever; with the close under mu, the waiter blocks on mu
// until the hand-over is done, sees its channel closed and passes the gate
// on.
func TestGateCancelRacingHandover(t *testing.T) {
	g := newGate()
	if !g.tryEnter() {
		t.Fatal("fresh gate taken")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- g.enter(ctx, nil) }()
	for g.waiters() != 1 {
		runtime.Gosched()
	}
	returned := make(chan error, 1)
	testHookHandover = func() {
		cancel()
		// Let the waiter act on its cancellation in the window, if it can.
		select {
		case err := <-done:
			returned <- err
		case <-time.After(200 * time.Millisecond):
		}
	}
	defer func() { testHookHandover = nil }()
	g.leave()
	testHookHandover = nil
	var err error
	select {
	case err = <-returned:
	default:
		err = <-done
	}
	if err == nil {
		// The waiter got the gate: it must be able to give it back.
		g.leave()
	}
	if !g.tryEnter() {
		t.Fatalf("gate held by nobody after a cancel raced the hand-over (waiter returned %v)", err)
	}
	g.leave()
}

// Storm: thousands of cancellations racing hand-overs, under several
// GOMAXPROCS, in strict and hand-off mode of the gate's use. Afterwards the
// gate must be free, and at every moment at most one goroutine inside.
func TestGateStormCancelVsHandover(t *testing.T) {
	for _, procs := range []int{1, 2, 4, 8} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			g := newGate()
			var inside, violations, entered atomic.Int64
			var wg sync.WaitGroup
			const workers, rounds = 32, 300
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for r := 0; r < rounds; r++ {
						ctx, cancel := context.WithCancel(context.Background())
						if (w+r)%3 == 0 {
							// Cancel at a random moment, racing the hand-over.
							go func() {
								runtime.Gosched()
								cancel()
							}()
						}
						if err := g.enter(ctx, nil); err == nil {
							if inside.Add(1) != 1 {
								violations.Add(1)
							}
							entered.Add(1)
							if r%7 == 0 {
								runtime.Gosched()
							}
							inside.Add(-1)
							g.leave()
						}
						cancel()
					}
				}()
			}
			finished := make(chan struct{})
			go func() { wg.Wait(); close(finished) }()
			select {
			case <-finished:
			case <-time.After(20 * time.Second):
				t.Fatalf("deadlock: workers stuck at the gate (waiters %d)", g.waiters())
			}
			if v := violations.Load(); v != 0 {
				t.Fatalf("%d times two goroutines were inside the gate", v)
			}
			if !g.tryEnter() {
				t.Fatal("gate held by nobody after the storm")
			}
			g.leave()
			t.Logf("%d entries", entered.Load())
		})
	}
}
