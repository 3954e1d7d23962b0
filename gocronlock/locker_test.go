package gocronlock_test

import (
	"errors"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/gocronlock"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// TestOnceInOffsetShape is gocron issue #841's shape in one process: three
// instances whose timers fire 0, 150 and 300 ms into each one-second
// tick, a job of 5 ms, each run releasing before the next instance tries.
// A lock alone runs each tick three times; the rule runs it once, on the
// first instance, and the run node records the tick's start by the
// server's clock.
func TestOnceInOffsetShape(t *testing.T) {
	root := zktest.Path(t)
	const job = "report"
	offsets := []time.Duration{0, 150 * time.Millisecond, 300 * time.Millisecond}
	lockers := make([]*gocronlock.Locker, len(offsets))
	for i := range lockers {
		lockers[i], _ = newLocker(t, root)
	}
	ctx := zktest.Context(t, 30*time.Second)
	start := time.Now().Truncate(time.Second).Add(time.Second)
	for tick := range 3 {
		at := start.Add(time.Duration(tick) * time.Second)
		ran := make([]bool, len(offsets))
		errs := make([]error, len(offsets))
		var wg sync.WaitGroup
		for i, off := range offsets {
			wg.Go(func() {
				time.Sleep(time.Until(at.Add(off)))
				ran[i], errs[i] = runOnce(ctx, lockers[i], job, func() { time.Sleep(5 * time.Millisecond) })
			})
		}
		zktest.Wait(t, "the tick's instances", &wg)
		if !ran[0] || ran[1] || ran[2] {
			t.Fatalf("tick %d: ran %v (errors %v), want only the first instance", tick, ran, errs)
		}
		for i := 1; i < len(offsets); i++ {
			if !errors.Is(errs[i], runonce.ErrAlreadyRan) || !errors.Is(errs[i], runonce.ErrSkipped) {
				t.Errorf("tick %d, instance %d: %v, want ErrAlreadyRan", tick, i, errs[i])
			}
		}
		last, err := lockers[2].LastRun(ctx, job)
		if err != nil {
			t.Fatal(err)
		}
		// The server is on this machine: its clock is ours.
		if d := last.At.Sub(at); d < -50*time.Millisecond || d > 150*time.Millisecond {
			t.Errorf("tick %d: last run recorded %v after the tick, want about 0", tick, d)
		}
	}
}

// TestUnlockWithCancelledContext: at shutdown gocron hands the last Unlock
// a cancelled context; the lock is released all the same.
func TestUnlockWithCancelledContext(t *testing.T) {
	root := zktest.Path(t)
	l, s := newLocker(t, root)
	held, err := l.Lock(zktest.Context(t, 10*time.Second), "job")
	if err != nil {
		t.Fatal(err)
	}
	lockPath := path.Join(root, "job", "lock")
	if n := len(zktest.Children(t, s.Conn(), lockPath)); n != 1 {
		t.Fatalf("%d lock nodes while held, want 1", n)
	}
	if err := held.Unlock(zktest.Cancelled()); err != nil {
		t.Fatalf("Unlock(cancelled): %v", err)
	}
	zktest.Eventually(t, 5*time.Second, "the lock node's delete", func() bool {
		return len(zktest.Children(t, s.Conn(), lockPath)) == 0
	})
	if err := held.Unlock(zktest.Cancelled()); !errors.Is(err, zklock.ErrNotHeld) {
		t.Errorf("second Unlock: %v, want ErrNotHeld", err)
	}
}
