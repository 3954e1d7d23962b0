package runonce_test

import (
	"errors"
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// TestHeldElsewhereSkips: a run whose tick is due but whose job's lock is
// held, by a run of an earlier tick still going on another instance, is
// skipped (ErrLockHeld), not queued; the rule, not the lock, makes the
// other attempts of a tick skip. The tick is lost, not counted as run: an
// attempt of it after the lock is free runs it.
func TestHeldElsewhereSkips(t *testing.T) {
	root := zktest.Path(t)
	const job = "held"
	const window = 300 * time.Millisecond
	a, _ := newRunner(t, root, runonce.WithWindow(window))
	b, _ := newRunner(t, root, runonce.WithWindow(window))
	ctx := zktest.Context(t, 20*time.Second)
	held, err := a.Claim(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Claim(ctx, job); !errors.Is(err, runonce.ErrAlreadyRan) {
		t.Fatalf("Lock in the same tick: %v, want ErrAlreadyRan", err)
	}
	time.Sleep(runonce.AfterWindow(window))
	begin := time.Now()
	if _, err := b.Claim(ctx, job); !errors.Is(err, runonce.ErrLockHeld) {
		t.Fatalf("Lock of the next tick while a's run goes on: %v, want ErrLockHeld", err)
	}
	if d := time.Since(begin); d > 500*time.Millisecond {
		t.Errorf("a skip took %v: it must not wait", d)
	}
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	// b's lost attempt did not count: a's attempt of the same tick, once
	// the lock is free, runs it; b's next attempt, in the same tick, not.
	ran, err := runOnce(ctx, a, job, nil)
	for deadline := time.Now().Add(2 * time.Second); errors.Is(err, runonce.ErrLockHeld) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond) // a's own release leaves within a moment
		ran, err = runOnce(ctx, a, job, nil)
	}
	if !ran {
		t.Fatalf("an attempt of the lost tick once the lock is free: %v, want a run", err)
	}
	if _, err := b.Claim(ctx, job); !errors.Is(err, runonce.ErrAlreadyRan) {
		t.Fatalf("b right after a's run: %v, want ErrAlreadyRan", err)
	}
	time.Sleep(runonce.AfterWindow(window))
	ran, err = runOnce(ctx, b, job, nil)
	for deadline := time.Now().Add(2 * time.Second); errors.Is(err, runonce.ErrLockHeld) && time.Now().Before(deadline); {
		// Unlock does not wait for ZooKeeper (zklock's Release): the
		// lock node's delete leaves within a moment.
		time.Sleep(20 * time.Millisecond)
		ran, err = runOnce(ctx, b, job, nil)
	}
	if !ran {
		t.Fatalf("Lock a tick later: %v, want a run", err)
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
	l, err := runonce.New(s, zktest.Path(t), runonce.WithLockTimeout(timeout))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := zktest.Context(t, 20*time.Second)
	begin := time.Now()
	if ran, err := runOnce(ctx, l, "job", nil); !ran {
		// The first run makes the job's nodes within the 300-ms lock
		// timeout, on a server that answers: a machine that spent the
		// whole timeout on it cannot give the scene its margin.
		if took := time.Since(begin); took >= timeout {
			t.Skipf("first run, on a server that answers: %v after %v, the lock timeout (%v) spent: the machine's delay; the scene needs it done well within", err, took.Round(time.Millisecond), timeout)
		}
		t.Fatalf("first run: %v", err)
	}
	if _, err := l.Claim(zktest.Cancelled(), "other"); err == nil {
		t.Error("Lock with a cancelled context succeeded")
	}
	p.Pause()
	defer p.Resume()
	for _, job := range []string{"job", "new-job"} {
		stalls := stallMeter()
		begin := time.Now()
		_, err := l.Claim(ctx, job)
		took := time.Since(begin)
		stalled := stalls()
		if err == nil {
			t.Fatalf("%s: Lock succeeded on a stalled server", job)
		}
		// The bound is the lock timeout and 200 ms, and what the machine
		// itself held a waking goroutine back meanwhile (measured by a
		// 5-ms sleep loop beside it): a Lock that waits on the server
		// takes seconds more, whatever the machine.
		if took > timeout+200*time.Millisecond+stalled {
			t.Errorf("%s: Lock took %v on a stalled server, bound %v (the machine's longest late wake meanwhile: %v)", job, took, timeout, stalled)
		}
		t.Logf("%s: stalled server: %v after %v (the machine's longest late wake: %v)", job, err, took, stalled)
	}
}

// stallMeter measures how late the machine wakes a goroutine: the longest
// oversleep of a 5-ms sleep loop, from the call until stop's.
func stallMeter() (stop func() time.Duration) {
	const nap = 5 * time.Millisecond
	done, worst := make(chan struct{}), make(chan time.Duration, 1)
	go func() {
		var w time.Duration
		for {
			select {
			case <-done:
				worst <- w
				return
			default:
			}
			begin := time.Now()
			time.Sleep(nap)
			w = max(w, time.Since(begin)-nap)
		}
	}()
	return func() time.Duration {
		close(done)
		return <-worst
	}
}

// TestStaleViewCannotPass: the run node's write is conditional on the
// version read, at the server. A write by someone else between the read
// and the write (twice: the retries meet it too) makes the attempt skip.
// The lock timeout is wide: the claim reads, meets the hook's write and
// reads again, and the default second ran out beside a busy core (loaded
// make test run 107: "read run node: context deadline exceeded").
func TestStaleViewCannotPass(t *testing.T) {
	root := zktest.Path(t)
	l, _ := newRunner(t, root, runonce.WithWindow(time.Millisecond), runonce.WithLockTimeout(10*time.Second))
	ctx := zktest.Context(t, 20*time.Second)
	if ran, err := runOnce(ctx, l, "job", nil); !ran {
		t.Fatalf("first run: %v", err)
	}
	other := zktest.Connect(t, zktest.Servers(t)).Conn()
	restore := runonce.SetAfterReadHook(func(runPath string) {
		if _, err := other.Set(runPath, []byte("x"), -1); err != nil {
			t.Error(err)
		}
	})
	time.Sleep(runonce.AfterWindow(time.Millisecond))
	if ran, err := runOnce(ctx, l, "job", nil); ran || !errors.Is(err, zk.ErrBadVersion) {
		t.Errorf("ran %v, %v; want a skip with zk.ErrBadVersion", ran, err)
	}
	restore()
	time.Sleep(runonce.AfterWindow(time.Millisecond))
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
	l, s := newRunner(t, root, runonce.WithWindow(window))
	ctx := zktest.Context(t, 20*time.Second)
	if ran, err := runOnce(ctx, l, "job", nil); !ran {
		t.Fatalf("first run: %v", err)
	}
	time.Sleep(window)
	if _, err := s.Conn().Set(path.Join(root, "job", "run"), []byte("not json"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Claim(ctx, "job"); !errors.Is(err, runonce.ErrAlreadyRan) {
		t.Fatalf("after an unreadable write: %v, want ErrAlreadyRan", err)
	}
	time.Sleep(runonce.AfterWindow(window))
	if ran, err := runOnce(ctx, l, "job", nil); !ran {
		t.Fatalf("a window later: %v", err)
	}
}

// TestKeysAreEscaped: any gocron job name, the default ones with their
// slashes and dots included, gets a node of its own.
func TestKeysAreEscaped(t *testing.T) {
	root := zktest.Path(t)
	l, s := newRunner(t, root)
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
