package tier

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The cancel-vs-grant race, made deterministic: the waiter's context ends
// while it is queued, its select takes ctx.Done(), and before it takes mu
// (testGaveUp) the holder releases, which grants the unit to the still
// queued waiter. The waiter then finds ready closed under mu and must give
// the unit back: it returns ctx.Err() and holds nothing. Without that undo
// the unit stays taken by nobody and the admission is dead.
func TestAdmissionCancelRacingGrant(t *testing.T) {
	for _, size := range []int64{1, 3} {
		t.Run(fmt.Sprintf("size=%d", size), func(t *testing.T) {
			a := newAdmission(size)
			if !a.tryAcquire(size) {
				t.Fatal("fresh admission taken")
			}
			granted := make(chan bool, 1)
			a.testGaveUp = func() {
				a.release(size)
				granted <- a.waiters() == 0 && taken(a.state.Load()) == size
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := admitQueue(t, a, ctx, size, nil)
			cancel()
			if err := admitResult(t, done, "cancelled"); !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled waiter returned %v", err)
			}
			if !<-granted {
				t.Fatal("the release in the window did not grant the waiter: the race was not staged")
			}
			a.testGaveUp = nil
			if s := a.state.Load(); s != 0 || !a.tryAcquire(size) {
				t.Fatalf("state %#x: the grant that raced the cancel was not undone", s)
			}
			a.release(size)
		})
	}
}

// handOff passes the unit straight to a queued waiter (it is never free
// in between) and refuses with nobody queued (the caller keeps it).
func TestAdmissionHandOff(t *testing.T) {
	ctx := context.Background()
	a := newAdmission(1)
	if !a.tryAcquire(1) {
		t.Fatal("fresh admission taken")
	}
	if a.handOff(1) {
		t.Fatal("hand-off with nobody queued")
	}
	if a.tryAcquire(1) {
		t.Fatal("the caller of a refused hand-off lost its unit")
	}
	done := admitQueue(t, a, ctx, 1, nil)
	if !a.handOff(1) {
		t.Fatal("no hand-off to a queued waiter")
	}
	// The unit went to the waiter without ever being free.
	if s := a.state.Load(); taken(s) != 1 || waitersIn(s) != 0 || a.tryAcquire(1) {
		t.Fatalf("state %#x after the hand-off", s)
	}
	if err := admitResult(t, done, "handed the unit"); err != nil {
		t.Fatal(err)
	}
	a.release(1)
}

// A weighted hand-off: refused while the head would not fit even with the
// caller's units (the caller keeps them), done once it would.
func TestAdmissionHandOffWeighted(t *testing.T) {
	ctx := context.Background()
	b := newAdmission(2)
	if !b.tryAcquire(1) || !b.tryAcquire(1) {
		t.Fatal("fresh admission taken")
	}
	done := admitQueue(t, b, ctx, 2, nil)
	if b.handOff(1) {
		t.Fatal("handed one unit to a head that needs two")
	}
	b.release(1) // the refused one releases: one unit free, still short of two
	admitBlocked(t, done, "one of two units free")
	if !b.handOff(1) { // the other holder's unit completes the head's request
		t.Fatal("no hand-off when the head fits")
	}
	if err := admitResult(t, done, "handed two units"); err != nil {
		t.Fatal(err)
	}
	b.release(2)
	if !b.tryAcquire(2) {
		t.Fatal("units lost")
	}
}

// handOff racing the head's give-up, both orders. Hand-off first: the
// waiter is granted as it gives up and passes the unit back, so the unit
// ends free (and handOff reported true: the caller no longer holds it).
// Give-up first: the queue is empty, handOff refuses and the caller keeps
// its unit.
func TestAdmissionHandOffRacingCancel(t *testing.T) {
	t.Run("hand-off first", func(t *testing.T) {
		a := newAdmission(1)
		if !a.tryAcquire(1) {
			t.Fatal("fresh admission taken")
		}
		handed := make(chan bool, 1)
		a.testGaveUp = func() { handed <- a.handOff(1) }
		ctx, cancel := context.WithCancel(context.Background())
		done := admitQueue(t, a, ctx, 1, nil)
		cancel()
		if err := admitResult(t, done, "cancelled"); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled waiter returned %v", err)
		}
		if !<-handed {
			t.Fatal("no hand-off to the still queued waiter: the race was not staged")
		}
		a.testGaveUp = nil
		if !a.tryAcquire(1) {
			t.Fatal("unit lost: the waiter did not give back the hand-off it refused")
		}
		a.release(1)
	})
	t.Run("give-up first", func(t *testing.T) {
		a := newAdmission(1)
		if !a.tryAcquire(1) {
			t.Fatal("fresh admission taken")
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := admitQueue(t, a, ctx, 1, nil)
		cancel()
		if err := admitResult(t, done, "cancelled"); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled waiter returned %v", err)
		}
		if a.handOff(1) {
			t.Fatal("hand-off to a waiter that left")
		}
		if a.tryAcquire(1) {
			t.Fatal("the caller of a refused hand-off lost its unit")
		}
		a.release(1)
	})
}

// Storm: goroutines with random weights acquire (some with contexts that
// end at random moments, some with a closed channel that closes at random
// moments), try, release or hand off, under several GOMAXPROCS. At every
// moment the units held by the goroutines that hold them are at most size;
// afterwards every unit is back and nobody is queued.
func TestAdmissionStorm(t *testing.T) {
	for _, procs := range []int{1, 2, 4, 8} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			const size, workers, rounds = 5, 24, 300
			st := &admitStorm{a: newAdmission(size), size: size}
			for w := 0; w < workers; w++ {
				st.wg.Add(1)
				go st.worker(rand.New(rand.NewPCG(uint64(w), uint64(procs))), rounds)
			}
			finished := make(chan struct{})
			go func() { st.wg.Wait(); close(finished) }()
			select {
			case <-finished:
			case <-time.After(20 * time.Second):
				t.Fatalf("deadlock: state %#x", st.a.state.Load())
			}
			if v := st.over.Load(); v != 0 {
				t.Fatalf("%d times more than %d units were held", v, size)
			}
			if s := st.a.state.Load(); s != 0 || st.a.head != nil || !st.a.tryAcquire(size) {
				t.Fatalf("state %#x after the storm: units or waiters left", s)
			}
			st.a.release(size)
			t.Logf("%d grants, %d given up, peak %d units held", st.got.Load(), st.gaveUp.Load(), st.peak.Load())
		})
	}
}

// admitStorm is TestAdmissionStorm's shared state: the admission, and the units
// held by the goroutines that hold them.
type admitStorm struct {
	a                             *admission
	size                          int64
	held, peak, over, got, gaveUp atomic.Int64
	wg                            sync.WaitGroup
}

func (st *admitStorm) worker(r *rand.Rand, rounds int) {
	defer st.wg.Done()
	for range rounds {
		n := 1 + r.Int64N(st.size) // some take every unit, as a writer
		if r.IntN(3) == 0 {
			n = 1
		}
		if r.IntN(8) == 0 {
			if st.a.tryAcquire(n) {
				st.hold(n, r)
			}
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		closed := make(chan struct{})
		switch r.IntN(4) {
		case 0:
			st.later(cancel)
		case 1:
			st.later(func() { close(closed) })
		}
		if err := st.a.acquire(ctx, n, closed); err == nil {
			st.hold(n, r)
		} else {
			st.gaveUp.Add(1)
		}
		cancel()
	}
}

// later runs end at a random moment, racing the acquire.
func (st *admitStorm) later(end func()) {
	st.wg.Add(1)
	go func() {
		defer st.wg.Done()
		runtime.Gosched()
		end()
	}()
}

// hold counts n units held, checks the bound, and gives them back by
// release or hand-off.
func (st *admitStorm) hold(n int64, r *rand.Rand) {
	if h := st.held.Add(n); h > st.size {
		st.over.Add(1)
	} else if h > st.peak.Load() {
		st.peak.Store(h)
	}
	st.got.Add(1)
	if r.IntN(4) == 0 {
		runtime.Gosched()
	}
	st.held.Add(-n)
	if r.IntN(5) != 0 || !st.a.handOff(n) {
		st.a.release(n)
	}
}
