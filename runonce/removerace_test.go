package runonce

import (
	"context"
	"errors"
	"path"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
)

// TestRemoveJobMeetsARunAgain: RemoveJob has deleted the job's run node
// and its lock's path when another instance, which still schedules the
// job, claims a tick (here from a hook right before the job's node is
// deleted): its Claim writes the run node again, below the job's node.
// RemoveJob waited for that node to empty, sending a delete every 20 ms
// until its ctx ended (for ever under context.Background); it now says
// the job is still scheduled (ErrJobActive) and leaves the run node.
func TestRemoveJobMeetsARunAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a run and a RemoveJob, about 2 s")
	}
	root := zktest.Path(t)
	// A lock timeout of a second, not 200 ms: it bounds each claim's
	// requests, and b's first run, which makes the job's nodes, met 200 ms
	// in a loaded make test (run 121: "create run node: context deadline
	// exceeded"). RemoveJob waits W and the lock timeout.
	opts := []Option{WithWindow(100 * time.Millisecond), WithLockTimeout(time.Second)}
	a, err := New(zktest.Connect(t, zktest.Servers(t)), root, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := New(zktest.Connect(t, zktest.Servers(t)), root, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := zktest.Context(t, 20*time.Second)
	if err := b.Do(ctx, "job", noop); err != nil { // the job's nodes, as a run leaves them
		t.Fatal(err)
	}
	dir, err := a.dir("job")
	if err != nil {
		t.Fatal(err)
	}
	lockGone(t, a, "job")
	testHookBeforeJobNodeDelete = func() {
		if err := b.Do(ctx, "job", noop); err != nil {
			t.Errorf("b's run: %v", err)
		}
	}
	defer func() { testHookBeforeJobNodeDelete = nil }()
	removing := zktest.Context(t, 5*time.Second)
	if err := a.RemoveJob(removing, "job"); !errors.Is(err, ErrJobActive) {
		t.Errorf("RemoveJob: %v, want ErrJobActive", err)
	}
	if ok, _, err := a.s.Conn().Exists(path.Join(dir, runName)); err != nil || !ok {
		t.Errorf("b's run node: exists %v (%v), want it kept", ok, err)
	}
}

func noop(context.Context) error { return nil }

// lockGone waits until r's job named key has no lock node: a run's
// Release deletes its node in the background, and a RemoveJob that comes
// before the delete lands finds the lock held and says ErrLockHeld
// (TestRemoverWithDefaults once in a loaded make test, and loaded run
// 43's TestRemoveJobMeetsARunAgain: "job lock held ... by another
// instance", 40 ms in).
func lockGone(t *testing.T, r *Runner, key string) {
	t.Helper()
	dir, err := r.dir(key)
	if err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 10*time.Second, "the job's lock free", func() bool {
		return len(zktest.Children(t, r.s.Conn(), path.Join(dir, lockName))) == 0
	})
}

// TestRemoveJobMeetsARunBack: between RemoveJob's delete of the run node
// and its delete of the lock's path, an instance that still schedules the
// job claims a tick and runs for 3 s (here from a hook). RemoveJob waited
// the whole run out, sending a delete every 20 ms (hours for a long job
// under context.Background); a lock node of another instance is an
// instance still scheduling the job: ErrJobActive at once.
func TestRemoveJobMeetsARunBack(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a 3-s run met by RemoveJob, about 5 s")
	}
	root := zktest.Path(t)
	opts := []Option{WithWindow(50 * time.Millisecond)}
	a, err := New(zktest.Connect(t, zktest.Servers(t)), root, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := New(zktest.Connect(t, zktest.Servers(t)), root, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := zktest.Context(t, 20*time.Second)
	if err := b.Do(ctx, "job", noop); err != nil {
		t.Fatal(err)
	}
	lockGone(t, a, "job")
	running := make(chan struct{})
	done := make(chan error, 1)
	var runAt time.Time
	testHookBeforeLockDelete = func() {
		testHookBeforeLockDelete = nil
		// RemoveJob's own lock node goes in the background (its Release):
		// b's first claim, sent before that delete lands, found the lock
		// held, waited for a run node no one made, and skipped its tick,
		// told lost to a holder gone by then (CI's race run at 4905f86).
		lockGone(t, a, "job")
		go func() {
			done <- b.Do(ctx, "job", func(context.Context) error {
				runAt = time.Now()
				close(running)
				time.Sleep(3 * time.Second)
				return nil
			})
		}()
		// b's Do may end without running (a skip): waiting for the run
		// alone, the hook, and RemoveJob with it, then waited forever,
		// and the package's tests ran out their timeout.
		select {
		case <-running:
		case err := <-done:
			done <- err
		}
	}
	defer func() { testHookBeforeLockDelete = nil }()
	err = a.RemoveJob(ctx, "job")
	select {
	case <-running:
	default:
		t.Fatalf("b's Do did not run the job: %v (RemoveJob: %v)", <-done, err)
	}
	took := time.Since(runAt)
	if bErr := <-done; bErr != nil {
		t.Errorf("b's run: %v", bErr)
	}
	if !errors.Is(err, ErrJobActive) || took > time.Second {
		t.Errorf("RemoveJob: %v after %v; want ErrJobActive at once", err, took.Round(time.Millisecond))
	}
}
