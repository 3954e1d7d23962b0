package gocronlock_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/tierlock/tierlock/gocronlock"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// newScheduler returns a started gocron scheduler on l, shut down when
// the test ends.
func newScheduler(t *testing.T, l *gocronlock.Locker) gocron.Scheduler {
	t.Helper()
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(l))
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { _ = s.Shutdown() })
	return s
}

// TestCleanupWithDefaults (issue 50, item 1), with two real gocron
// schedulers of a fleet whose window is 3 s: their timers for a tick
// fire 2 s apart (a one-time job, at T and T+2s). A cleanup Locker made
// with the defaults removes the job right after the first run: it aged
// the run by its own window and lock timeout (1.5 s) and deleted the run
// node, and the second scheduler ran the tick again (7 of 7 before). Three
// jobs side by side: each tick runs once, and RemoveJob says the job is
// still scheduled (after a run of it going on, beside a busy core).
//
// Each RemoveJob starts once its job's first run is seen, not at a fixed
// time: loaded make test run 126 called it 200 ms after the first timer,
// before that run (late beside a busy core) had written the run node, and
// RemoveJob truly said nil (a job that never ran). One that starts after
// the second timer (T+2s) may truly say nil too: that case is logged.
func TestCleanupWithDefaults(t *testing.T) {
	root := zktest.Path(t)
	fleet := runonce.WithWindow(3 * time.Second)
	la, _ := newLocker(t, root, fleet)
	lb, _ := newLocker(t, root, fleet)
	cleanup, _ := newLocker(t, root)
	sa, sb := newScheduler(t, la), newScheduler(t, lb)
	ctx := zktest.Context(t, 30*time.Second)
	start := time.Now().Add(time.Second)
	const jobs = 3
	var runs [jobs]atomic.Int32
	removed := make([]error, jobs)
	began := make([]time.Time, jobs)
	var wg sync.WaitGroup
	for i := range jobs {
		name := fmt.Sprint("report-", i)
		task := gocron.NewTask(func() { runs[i].Add(1) })
		for k, s := range []gocron.Scheduler{sa, sb} {
			at := start.Add(time.Duration(k) * 2 * time.Second)
			if _, err := s.NewJob(gocron.OneTimeJob(gocron.OneTimeJobStartDateTime(at)), task, gocron.WithName(name)); err != nil {
				t.Fatal(err)
			}
		}
		wg.Go(func() {
			for runs[i].Load() == 0 && ctx.Err() == nil {
				time.Sleep(5 * time.Millisecond)
			}
			began[i] = time.Now()
			_, removed[i] = removeJob(ctx, cleanup, name)
		})
	}
	zktest.Wait(t, "the RemoveJob calls", &wg)
	time.Sleep(time.Until(start.Add(2500 * time.Millisecond)))
	second := start.Add(2 * time.Second)
	for i := range jobs {
		if n := runs[i].Load(); n != 1 {
			t.Errorf("report-%d's tick ran %d times, want once", i, n)
		}
		switch late := began[i].Sub(start); {
		case errors.Is(removed[i], runonce.ErrJobActive):
		case !began[i].Before(second):
			t.Logf("report-%d: RemoveJob began %v after the first timer, after the second's: %v", i, late, removed[i])
		default:
			t.Errorf("report-%d: RemoveJob began %v after the first timer (after its run): %v, want ErrJobActive", i, late, removed[i])
		}
	}
}

// TestRemoveJobUnderItsScheduler (issue 50, item 2): the instance whose
// gocron scheduler runs a job removes it. RemoveJob returned nil, its own
// ticks refused locally, and the scheduler made the nodes again at once (8
// of 8 before): ErrJobActive. A RemoveJob that meets a run of the job
// going on gets ErrLockHeld (its doc), as a caller would retry: loaded
// make test run 59 met one (the scheduler's run of a tick, slow beside a
// busy core), and -remove.work=60ms, runs that fill most of the period,
// meets one in most runs.
func TestRemoveJobUnderItsScheduler(t *testing.T) {
	l, _ := newLocker(t, zktest.Path(t), runonce.WithWindow(50*time.Millisecond), runonce.WithLockTimeout(300*time.Millisecond))
	s := newScheduler(t, l)
	var runs atomic.Int32
	task := gocron.NewTask(func() { runs.Add(1); time.Sleep(*removeWork) })
	if _, err := s.NewJob(gocron.DurationJob(100*time.Millisecond), task, gocron.WithName("report")); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 5*time.Second, "two runs", func() bool { return runs.Load() >= 2 })
	ctx := zktest.Context(t, 10*time.Second)
	held, err := removeJob(ctx, l, "report")
	if !errors.Is(err, runonce.ErrJobActive) {
		t.Errorf("RemoveJob of a job its own scheduler runs: %v (after %d refusals for a run going on), want ErrJobActive", err, held)
	}
}

// removeJob calls RemoveJob as a caller would: again, at another point of
// the period, while it meets a run of the job going on (ErrLockHeld, its
// doc). It returns how many runs it met and the first other answer.
func removeJob(ctx context.Context, l *gocronlock.Locker, job string) (held int, err error) {
	err = l.RemoveJob(ctx, job)
	for ; errors.Is(err, runonce.ErrLockHeld) && ctx.Err() == nil; held++ {
		time.Sleep(time.Duration(rand.N(50)) * time.Millisecond)
		err = l.RemoveJob(ctx, job)
	}
	return held, err
}

var removeWork = flag.Duration("remove.work", 0, "TestRemoveJobUnderItsScheduler: how long each run of the job lasts")
