package runonce_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// TestRemoverWithDefaults: a cleanup Runner made with the defaults
// (500 ms window, 1 s lock timeout) removes a job of a fleet whose window
// is 2 s. It aged the last run by its own window and timeout, 1.5 s, and
// deleted the run node; c's attempt of the same tick, 1.8 s after a's run
// and within the fleet's window, found nothing and ran the tick again.
// The remover now judges by the larger of its own and the recorded window
// and lock timeout: c's attempt finds the node, skips, and shows the job
// still scheduled.
func TestRemoverWithDefaults(t *testing.T) {
	root := zktest.Path(t)
	fleet := []runonce.Option{runonce.WithWindow(2 * time.Second)}
	a, _ := newRunner(t, root, fleet...)
	c, _ := newRunner(t, root, fleet...)
	cleanup, _ := newRunner(t, root)
	ctx := zktest.Context(t, 30*time.Second)
	if err := a.Do(ctx, "job", noopRun); err != nil {
		t.Fatal(err)
	}
	ranAt := time.Now()
	runonce.WaitLockFree(t, cleanup, "job")
	removed := make(chan error, 1)
	go func() { removed <- cleanup.RemoveJob(ctx, "job") }()
	time.Sleep(time.Until(ranAt.Add(1800 * time.Millisecond)))
	if err := c.Do(ctx, "job", noopRun); err == nil {
		t.Errorf("c ran the tick a ran %v before, within the fleet's window", time.Since(ranAt).Round(time.Millisecond))
	}
	if err := <-removed; !errors.Is(err, runonce.ErrJobActive) {
		t.Errorf("RemoveJob: %v, want ErrJobActive (c attempted the job meanwhile)", err)
	}
}

// TestRemoveJobSeesItsOwnTicks: the instance whose scheduler runs the job
// removes it. RemoveJob returned nil while its own ticks were refused
// "job lock held ... by a run of this instance" (no such run, and no
// write for RemoveJob to see); the scheduler made the nodes again at its
// next tick. Its own attempts count: ErrJobActive, and they are refused
// as skipped for the removal.
func TestRemoveJobSeesItsOwnTicks(t *testing.T) {
	var mu sync.Mutex
	var refusals []error
	var attempts []time.Time // when each attempt was told, to measure the ticker's gaps
	a, _ := newRunner(t, zktest.Path(t), runonce.WithWindow(50*time.Millisecond), runonce.WithLockTimeout(300*time.Millisecond),
		runonce.WithObserver(func(e runonce.Event) {
			mu.Lock()
			attempts = append(attempts, time.Now())
			if e.Err != nil {
				refusals = append(refusals, e.Err)
			}
			mu.Unlock()
		}))
	stop := tickJobs(a, 1, 100*time.Millisecond)
	defer stop()
	time.Sleep(300 * time.Millisecond)
	// A tick's run may hold the job's lock as RemoveJob comes (ErrLockHeld,
	// "by a run of this instance", true then: loaded make test run 140); it
	// calls again while it says so, for at most 2 s, as the other removal
	// tests do.
	begin := time.Now()
	err := runonce.RemoveAfterRelease(zktest.Context(t, 10*time.Second), a, "job-0")
	end := time.Now()
	mu.Lock()
	defer mu.Unlock()
	if !errors.Is(err, runonce.ErrJobActive) {
		// RemoveJob watches the job for a write until its last run is
		// twice the window and the lock timeout old (remove.go's retire:
		// 700 ms here); the 100-ms ticker gives it seven. A machine that
		// held the ticker half that watch or more while RemoveJob ran
		// may have left it nothing to see: not the scene. Judged
		// otherwise.
		const watch = 2 * (50*time.Millisecond + 300*time.Millisecond)
		if gap := widestGap(attempts, begin, end); gap >= watch/2 {
			t.Skipf("the ticker's attempts were %v apart while RemoveJob ran (it watches %v): the machine's delay; RemoveJob: %v; the scene needs the 100-ms ticker's attempts under %v apart", gap.Round(time.Millisecond), watch, err, watch/2)
		}
		t.Errorf("RemoveJob of a job this instance schedules: %v, want ErrJobActive", err)
	}
	for _, e := range refusals {
		if strings.Contains(e.Error(), "by a run of this instance") {
			t.Errorf("a tick refused for a run that was not: %v", e)
			break
		}
	}
}

// widestGap is the longest stretch of [begin, end] with no time of at in
// it.
func widestGap(at []time.Time, begin, end time.Time) time.Duration {
	widest, last := time.Duration(0), begin
	for _, a := range at {
		if a.After(begin) && a.Before(end) {
			widest, last = max(widest, a.Sub(last)), a
		}
	}
	return max(widest, end.Sub(last))
}

// TestRemoveJobSeesLocalSkips: b schedules the job, but its attempts come
// after a's runs and skip without a write (its server-clock note says the
// run is recent): RemoveJob saw no write and deleted the job under b. b's
// attempts in the window RemoveJob watches now write, and RemoveJob says
// ErrJobActive.
//
// RemoveJob starts once a's lock node is gone (WaitLockFree), and b attempts
// once RemoveJob holds the job's lock, which its first write of the run
// node (the removal mark) shows. A fixed 100 ms once stood for that:
// beside busy loops, b's attempt came first, took the lock, and RemoveJob
// said ErrLockHeld (1 of 4 at load 3).
func TestRemoveJobSeesLocalSkips(t *testing.T) {
	root := zktest.Path(t)
	opts := []runonce.Option{runonce.WithWindow(300 * time.Millisecond), runonce.WithLockTimeout(300 * time.Millisecond)}
	a, _ := newRunner(t, root, opts...)
	b, _ := newRunner(t, root, opts...)
	cleanup, s := newRunner(t, root, opts...)
	name, err := runonce.NodeName("job")
	if err != nil {
		t.Fatal(err)
	}
	runPath := root + "/" + name + "/run"
	ctx := zktest.Context(t, 20*time.Second)
	for range 2 { // b's second run writes the node and notes the server's clock
		if err := b.Do(ctx, "job", noopRun); err != nil {
			t.Fatal(err)
		}
		time.Sleep(runonce.AfterWindow(300 * time.Millisecond))
	}
	if err := a.Do(ctx, "job", noopRun); err != nil {
		t.Fatal(err)
	}
	_, ran, err := s.Conn().Get(runPath)
	if err != nil {
		t.Fatal(err)
	}
	runonce.WaitLockFree(t, cleanup, "job")
	removed := make(chan error, 1)
	go func() { removed <- cleanup.RemoveJob(ctx, "job") }()
	zktest.Eventually(t, 10*time.Second, "RemoveJob's mark on the run node", func() bool {
		_, st, err := s.Conn().Get(runPath)
		return err == nil && st.Version > ran.Version
	})
	if err := b.Do(ctx, "job", noopRun); !errors.Is(err, runonce.ErrSkipped) {
		t.Errorf("b's attempt of a's tick: %v, want a skip", err)
	}
	if err := <-removed; !errors.Is(err, runonce.ErrJobActive) {
		t.Errorf("RemoveJob while b attempted the job: %v, want ErrJobActive", err)
	}
}

// TestRemoveJobWatches: RemoveJob waits for the last run to age (here 2 s
// and a lock timeout: the fleet's window), and an attempt that writes
// meanwhile ends the wait at once with ErrJobActive: it waits by a watch
// on the run node. It answered at the end of the wait.
func TestRemoveJobWatches(t *testing.T) {
	root := zktest.Path(t)
	fleet := []runonce.Option{runonce.WithWindow(2 * time.Second), runonce.WithSpread()} // every attempt writes
	a, _ := newRunner(t, root, fleet...)
	b, _ := newRunner(t, root, fleet...)
	ctx := zktest.Context(t, 30*time.Second)
	if err := a.Do(ctx, "job", noopRun); err != nil {
		t.Fatal(err)
	}
	removed := make(chan error, 1)
	go func() { removed <- a.RemoveJob(ctx, "job") }()
	time.Sleep(300 * time.Millisecond)
	_ = b.Do(ctx, "job", noopRun)
	wrote := time.Now()
	err := <-removed
	took := time.Since(wrote)
	t.Logf("RemoveJob: %v, %v after b's attempt", err, took.Round(time.Millisecond))
	if !errors.Is(err, runonce.ErrJobActive) || took > 500*time.Millisecond {
		t.Errorf("RemoveJob: %v, %v after b's write; want ErrJobActive at once", err, took)
	}
}

// TestRemoveJobLeavesNothing: every job removed left its entry and its
// zklock.Lock in the Runner for ever (200 of 200).
func TestRemoveJobLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 200 jobs added and removed, about 5 s")
	}
	r, _ := newRunner(t, zktest.Path(t), runonce.WithWindow(time.Millisecond), runonce.WithLockTimeout(2*time.Second))
	ctx := zktest.Context(t, 60*time.Second)
	const n = 200
	for i := range n {
		if err := r.Do(ctx, fmt.Sprint("job-", i), noopRun); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			job := fmt.Sprint("job-", i)
			err := r.RemoveJob(ctx, job)
			for errors.Is(err, runonce.ErrLockHeld) { // its own release, on its way
				time.Sleep(20 * time.Millisecond)
				err = r.RemoveJob(ctx, job)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	zktest.Wait(t, "the RemoveJob calls", &wg)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := runonce.JobCount(r); got != 0 {
		t.Errorf("%d of %d job entries left after their RemoveJob", got, n)
	}
}

func noopRun(context.Context) error { return nil }
