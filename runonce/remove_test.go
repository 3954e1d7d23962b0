package runonce_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/runrec"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// TestRemoveJob: a retired job's run node goes, and with it the job's
// node; a job held elsewhere is refused.
func TestRemoveJob(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waits out a job's window and lock, about 3 s")
	}
	root := zktest.Path(t)
	a, s := newRunner(t, root)
	b, _ := newRunner(t, root)
	ctx := zktest.Context(t, 20*time.Second)
	held, err := a.Claim(ctx, "retired")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.RemoveJob(ctx, "retired"); !errors.Is(err, runonce.ErrLockHeld) {
		t.Errorf("RemoveJob while held: %v, want ErrLockHeld", err)
	}
	_ = held.Release()
	zktest.Eventually(t, 5*time.Second, "RemoveJob", func() bool { return b.RemoveJob(ctx, "retired") == nil })
	if last, err := a.LastRun(ctx, "retired"); err != nil || !last.At.IsZero() {
		t.Errorf("LastRun after RemoveJob: %+v, %v", last, err)
	}
	for _, p := range []string{"/retired/run", "/retired/lock", "/retired"} {
		if ok, _, _ := s.Conn().Exists(root + p); ok {
			t.Errorf("%s is still there", p)
		}
	}
	if err := b.RemoveJob(ctx, "never-ran"); err != nil {
		t.Errorf("RemoveJob of a job that never ran: %v", err)
	}
}

// TestUnknownKeysLeaveNothing: LastRun and RemoveJob of keys this
// instance never scheduled leave no job entry (and no lock) behind: they
// made one per key, never removed.
func TestUnknownKeysLeaveNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 2,000 LastRun and RemoveJob calls, about 2 s")
	}
	root := zktest.Path(t)
	l, _ := newRunner(t, root)
	ctx := zktest.Context(t, 60*time.Second)
	if ran, err := runOnce(ctx, l, "scheduled", nil); !ran {
		t.Fatal(err)
	}
	const n = 1000
	for i := range n {
		if _, err := l.LastRun(ctx, fmt.Sprint("asked-", i)); err != nil {
			t.Fatal(err)
		}
		if err := l.RemoveJob(ctx, fmt.Sprint("retired-", i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := runonce.JobCount(l); got != 1 {
		t.Errorf("%d job entries after LastRun and RemoveJob of %d unknown keys, want 1 (the scheduled job's)", got, 2*n)
	}
}

// TestRemoveJobWhileScheduled: RemoveJob's doc said it took the job's
// lock "so that no run decides meanwhile", but a run decides before it
// locks. A ran a tick; B's RemoveJob deleted the run node at once; C's
// attempt of the same tick, within the window, found no node and ran the
// tick again. Now RemoveJob deletes the node only once the last run is a
// window and a lock timeout old by the server's clock: C's attempt finds
// it, skips, and by its write shows the job still scheduled, which
// RemoveJob reports (ErrJobActive), deleting nothing.
func TestRemoveJobWhileScheduled(t *testing.T) {
	root := zktest.Path(t)
	const w = 300 * time.Millisecond
	opts := []runonce.Option{runonce.WithWindow(w), runonce.WithLockTimeout(300 * time.Millisecond)}
	a, s := newRunner(t, root, opts...)
	b, _ := newRunner(t, root, opts...)
	c, _ := newRunner(t, root, opts...)
	ctx := zktest.Context(t, 20*time.Second)
	ranAt := time.Now()
	if ran, err := runOnce(ctx, a, "job", nil); !ran {
		t.Fatal(err)
	}
	aDone := time.Now() // A's run was written before this
	// A's Unlock deletes its lock node in the background.
	for len(zktest.Children(t, s.Conn(), root+"/job/lock")) > 0 && time.Since(ranAt) < w/4 {
		time.Sleep(time.Millisecond)
	}
	removed := make(chan error, 1)
	go func() { removed <- b.RemoveJob(zktest.Context(t, 5*time.Second), "job") }()
	// C's attempt of the tick: once the run node is gone (RemoveJob
	// deleted it at once), or once RemoveJob's first write marked it as
	// being removed: its wait for an attempt's write counts from that
	// write, and an attempt written before it is one RemoveJob cannot see
	// (a loaded machine that delayed B's goroutine past C's attempt made
	// this test fail so: RemoveJob nil, the node gone).
	marked := false
	for time.Since(ranAt) < 5*time.Second {
		data, st, err := s.Conn().Get(root + "/job/run")
		if errors.Is(err, zk.ErrNoNode) {
			break
		}
		if err == nil && runrec.Derive(data, st.Mtime, st.Mzxid).Removing != "" {
			marked = true
			break
		}
		time.Sleep(time.Millisecond)
	}
	at := time.Since(ranAt)
	cStart := time.Since(aDone) // at least how long after A's run C's attempt starts
	if marked && cStart >= w {
		t.Skipf("RemoveJob marked the run node %v after A's run, past the window (%v): the machine's delay; the scene needs C's attempt after that write and within the window", at.Round(time.Millisecond), w)
	}
	ran, cErr := runOnce(ctx, c, "job", nil)
	cEnd := time.Since(ranAt) // at most how long after A's run C's attempt ended
	if ran {
		// C asks for W/2 after A's run; started a window after it or
		// later, its attempt is a tick of its own by the rule: not the
		// scene. Started within the window, a run is a double.
		if cStart >= w {
			t.Skipf("C's attempt started %v after A's run, past the window (%v): the machine made it a tick of its own; the scene needs it within the window", cStart.Round(time.Millisecond), w)
		}
		t.Errorf("C ran the tick A ran %v before: a tick run twice", at.Round(time.Millisecond))
	}
	err := <-removed
	t.Logf("C's attempt %v after A's run (RemoveJob's mark seen: %v): %v; RemoveJob: %v", at.Round(time.Millisecond), marked, cErr, err)
	if !errors.Is(err, runonce.ErrJobActive) {
		// RemoveJob watches until the last run is twice the window and
		// the lock timeout old (remove.go's retire: 1.2 s here): a write
		// of C's that may have come later is not one it can see. Judged
		// when C's attempt ended sooner.
		if watch := 2 * (w + 300*time.Millisecond); cEnd >= watch {
			t.Skipf("C's attempt ended %v after A's run, maybe past RemoveJob's watch (%v): the machine's delay; RemoveJob: %v; the scene needs C's write within it", cEnd.Round(time.Millisecond), watch, err)
		}
		t.Errorf("RemoveJob of a job an instance wrote meanwhile: %v, want ErrJobActive", err)
	}
	if ok, _, _ := s.Conn().Exists(root + "/job/run"); !ok {
		t.Error("the run node is gone")
	}
	// The fleet stops scheduling it: RemoveJob waits for the last run to
	// age, then deletes.
	begin := time.Now()
	if err := b.RemoveJob(ctx, "job"); err != nil {
		t.Fatal(err)
	}
	t.Logf("RemoveJob of the retired job took %v", time.Since(begin).Round(time.Millisecond))
	for _, p := range []string{"/job/run", "/job/lock", "/job"} {
		if ok, _, _ := s.Conn().Exists(root + p); ok {
			t.Errorf("%s is still there", p)
		}
	}
	if ran, err := runOnce(ctx, c, "job", nil); !ran {
		t.Errorf("the job scheduled again: %v, want its first run", err)
	}
}
