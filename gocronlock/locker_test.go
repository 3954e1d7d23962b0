package gocronlock_test

import (
	"errors"
	"path"
	"slices"
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
// A lock alone runs each tick three times; the rule runs it once, and the
// run node records the start of that run's timer by the server's clock.
// The first instance usually runs it; beside a busy core its claim can
// still be on its way when the second's is decided (CI on b964fdc: the
// first tick's claim, which makes the job's nodes, was passed by the
// second instance's), and the tick is then the second's.
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
		runner := slices.Index(ran, true)
		if runner < 0 || slices.Index(ran[runner+1:], true) >= 0 {
			t.Fatalf("tick %d: ran %v (errors %v), want one instance", tick, ran, errs)
		}
		if runner > 0 {
			t.Logf("tick %d: run by instance %d, the first's claim was passed (%v)", tick, runner, errs[0])
		}
		for i := range offsets {
			if i != runner && (!errors.Is(errs[i], runonce.ErrAlreadyRan) || !errors.Is(errs[i], runonce.ErrSkipped)) {
				t.Errorf("tick %d, instance %d: %v, want ErrAlreadyRan", tick, i, errs[i])
			}
		}
		last, err := lockers[2].LastRun(ctx, job)
		if err != nil {
			t.Fatal(err)
		}
		// The server is on this machine: its clock is ours.
		fired := at.Add(offsets[runner])
		if d := last.At.Sub(fired); d < -50*time.Millisecond || d > 150*time.Millisecond {
			t.Errorf("tick %d: last run recorded %v after instance %d's timer, want about 0", tick, d, runner)
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
