package gocronlock_test

import (
	"errors"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/gocronlock"
	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zktest"
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
		wg.Wait()
		if !ran[0] || ran[1] || ran[2] {
			t.Fatalf("tick %d: ran %v (errors %v), want only the first instance", tick, ran, errs)
		}
		for i := 1; i < len(offsets); i++ {
			if !errors.Is(errs[i], gocronlock.ErrAlreadyRan) || !errors.Is(errs[i], gocronlock.ErrSkipped) {
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

// TestHeldElsewhereSkips: a run whose tick is due but whose job's lock
// is held, by a run of an earlier tick still going on another instance,
// is skipped (ErrLockHeld), not queued, and the tick counts as run; the
// rule, not the lock, makes the other attempts of a tick skip.
func TestHeldElsewhereSkips(t *testing.T) {
	root := zktest.Path(t)
	const job = "held"
	const window = 300 * time.Millisecond
	a, _ := newLocker(t, root, gocronlock.WithWindow(window))
	b, _ := newLocker(t, root, gocronlock.WithWindow(window))
	ctx := zktest.Context(t, 20*time.Second)
	held, err := a.Lock(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Lock(ctx, job); !errors.Is(err, gocronlock.ErrAlreadyRan) {
		t.Fatalf("Lock in the same tick: %v, want ErrAlreadyRan", err)
	}
	time.Sleep(gocronlock.AfterWindow(window))
	begin := time.Now()
	if _, err := b.Lock(ctx, job); !errors.Is(err, gocronlock.ErrLockHeld) {
		t.Fatalf("Lock of the next tick while a's run goes on: %v, want ErrLockHeld", err)
	}
	if d := time.Since(begin); d > 500*time.Millisecond {
		t.Errorf("a skip took %v: it must not wait", d)
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// b's skipped attempt counts as the tick's run.
	if _, err := a.Lock(ctx, job); !errors.Is(err, gocronlock.ErrAlreadyRan) {
		t.Fatalf("Lock right after the skipped tick: %v, want ErrAlreadyRan", err)
	}
	time.Sleep(gocronlock.AfterWindow(window))
	ran, err := runOnce(ctx, b, job, nil)
	for deadline := time.Now().Add(2 * time.Second); errors.Is(err, gocronlock.ErrLockHeld) && time.Now().Before(deadline); {
		// Unlock does not wait for ZooKeeper (zklock's Release): the
		// lock node's delete leaves within a moment.
		time.Sleep(20 * time.Millisecond)
		ran, err = runOnce(ctx, b, job, nil)
	}
	if !ran {
		t.Fatalf("Lock a tick later: %v, want a run", err)
	}
}

// TestOverlapInOneInstanceSkips: a tick that fires while this instance's
// previous run still holds the job is skipped without asking ZooKeeper.
func TestOverlapInOneInstanceSkips(t *testing.T) {
	l, _ := newLocker(t, zktest.Path(t), gocronlock.WithJobWindow("fast", time.Millisecond))
	ctx := zktest.Context(t, 20*time.Second)
	held, err := l.Lock(ctx, "fast")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Lock(ctx, "fast"); !errors.Is(err, gocronlock.ErrLockHeld) {
		t.Fatalf("second Lock of one instance: %v, want ErrLockHeld", err)
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(gocronlock.AfterWindow(time.Millisecond))
	if ran, err := runOnce(ctx, l, "fast", nil); !ran {
		t.Fatalf("Lock after Unlock: %v", err)
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

// TestLockIsBounded: whatever ZooKeeper does (here: nothing crosses the
// connection any more), Lock returns within its timeout and the run is
// skipped; a cancelled job context is refused at once.
func TestLockIsBounded(t *testing.T) {
	p, err := faultproxy.New(zktest.Servers(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s := zktest.Connect(t, []string{p.Addr()}, zklock.WithSessionTimeout(10*time.Second))
	const timeout = 300 * time.Millisecond
	l, err := gocronlock.NewLocker(s, zktest.Path(t), gocronlock.WithLockTimeout(timeout))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := zktest.Context(t, 20*time.Second)
	if ran, err := runOnce(ctx, l, "job", nil); !ran {
		t.Fatalf("first run: %v", err)
	}
	if _, err := l.Lock(zktest.Cancelled(), "other"); err == nil {
		t.Error("Lock with a cancelled context succeeded")
	}
	p.Pause()
	defer p.Resume()
	for _, job := range []string{"job", "new-job"} {
		begin := time.Now()
		_, err := l.Lock(ctx, job)
		took := time.Since(begin)
		if err == nil {
			t.Fatalf("%s: Lock succeeded on a stalled server", job)
		}
		if took > timeout+200*time.Millisecond {
			t.Errorf("%s: Lock took %v on a stalled server, bound %v", job, took, timeout)
		}
		t.Logf("%s: stalled server: %v after %v", job, err, took)
	}
}

// TestStaleViewCannotPass: the run node's write is conditional on the
// version read, at the server. A write by someone else between the read
// and the write (twice: the retries meet it too) makes the attempt skip.
func TestStaleViewCannotPass(t *testing.T) {
	root := zktest.Path(t)
	l, _ := newLocker(t, root, gocronlock.WithWindow(time.Millisecond))
	ctx := zktest.Context(t, 20*time.Second)
	if ran, err := runOnce(ctx, l, "job", nil); !ran {
		t.Fatalf("first run: %v", err)
	}
	other := zktest.Connect(t, zktest.Servers(t)).Conn()
	restore := gocronlock.SetAfterReadHook(func(runPath string) {
		if _, err := other.Set(runPath, []byte("x"), -1); err != nil {
			t.Error(err)
		}
	})
	time.Sleep(gocronlock.AfterWindow(time.Millisecond))
	if ran, err := runOnce(ctx, l, "job", nil); ran || !errors.Is(err, zk.ErrBadVersion) {
		t.Errorf("ran %v, %v; want a skip with zk.ErrBadVersion", ran, err)
	}
	restore()
	time.Sleep(gocronlock.AfterWindow(time.Millisecond))
	if ran, err := runOnce(ctx, l, "job", nil); !ran {
		t.Fatalf("run after the fault: %v", err)
	}
}

// TestUnreadableRecordCountsAsRun: a run node an operator overwrote is
// taken for a run at the time of that write: a skip now, a run after the
// window, never two runs in one window.
func TestUnreadableRecordCountsAsRun(t *testing.T) {
	root := zktest.Path(t)
	const window = 300 * time.Millisecond
	l, s := newLocker(t, root, gocronlock.WithWindow(window))
	ctx := zktest.Context(t, 20*time.Second)
	if ran, err := runOnce(ctx, l, "job", nil); !ran {
		t.Fatalf("first run: %v", err)
	}
	time.Sleep(window)
	if _, err := s.Conn().Set(path.Join(root, "job", "run"), []byte("not json"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Lock(ctx, "job"); !errors.Is(err, gocronlock.ErrAlreadyRan) {
		t.Fatalf("after an unreadable write: %v, want ErrAlreadyRan", err)
	}
	time.Sleep(gocronlock.AfterWindow(window))
	if ran, err := runOnce(ctx, l, "job", nil); !ran {
		t.Fatalf("a window later: %v", err)
	}
}

// TestKeysAreEscaped: any gocron job name, the default ones with their
// slashes and dots included, gets a node of its own.
func TestKeysAreEscaped(t *testing.T) {
	root := zktest.Path(t)
	l, s := newLocker(t, root)
	ctx := zktest.Context(t, 20*time.Second)
	keys := []string{"a/b", "a%2Fb", ".", "..", "github.com/x/y.main.func1", "über job", "tab\there"}
	for _, k := range keys {
		if ran, err := runOnce(ctx, l, k, nil); !ran {
			t.Errorf("%q: %v", k, err)
		}
	}
	if n := len(zktest.Children(t, s.Conn(), root)); n != len(keys) {
		t.Errorf("%d job nodes for %d keys", n, len(keys))
	}
}
