package gocronlock_test

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/tierlock/tierlock/gocronlock"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// logged is a session whose logs (Info and above) a test reads.
func logged(t *testing.T, servers []string, opts ...zklock.SessionOption) (*zklock.Session, *zktest.SyncBuffer) {
	t.Helper()
	var buf zktest.SyncBuffer
	opts = append([]zklock.SessionOption{zklock.WithLogger(slog.New(slog.NewTextHandler(&buf, nil)))}, opts...)
	return zktest.Connect(t, servers, opts...), &buf
}

// TestUnnamedJobsWarned (issue 39, item 1): ten jobs made by one closure
// without gocron.WithName share gocron's default name, the closure's, and
// so one lock; the first tick says so, loudly, naming the key.
func TestUnnamedJobsWarned(t *testing.T) {
	s, logs := logged(t, zktest.Servers(t))
	l, err := gocronlock.NewLocker(s, zktest.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sched, err := gocron.NewScheduler(gocron.WithDistributedLocker(l))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	ran := map[int]int{}
	for i := range 10 {
		if _, err := sched.NewJob(gocron.DurationJob(200*time.Millisecond), gocron.NewTask(func() {
			mu.Lock()
			ran[i]++
			mu.Unlock()
		})); err != nil {
			t.Fatal(err)
		}
	}
	sched.Start()
	defer sched.Shutdown()
	zktest.Eventually(t, 5*time.Second, "the shared key's warning", func() bool {
		return strings.Contains(logs.String(), "several jobs of this scheduler share one lock key")
	})
	if out := logs.String(); !strings.Contains(out, "TestUnnamedJobsWarned.func") || !strings.Contains(out, "job without a name") {
		t.Errorf("the warnings do not name the key, or miss the default name:\n%s", out)
	}
}

// TestUpdatedJobNotShared (issue 43, item 10): gocron's Scheduler.Update
// replaces a job by one of the same name, with a context of its own; the
// Locker took the new context for a second job sharing the key and logged
// an Error. A job replaced is not two jobs.
func TestUpdatedJobNotShared(t *testing.T) {
	s, logs := logged(t, zktest.Servers(t))
	l, err := gocronlock.NewLocker(s, zktest.Path(t), runonce.WithWindow(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sched, err := gocron.NewScheduler(gocron.WithDistributedLocker(l))
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Shutdown()
	var runs atomic.Int32
	task := gocron.NewTask(func() { runs.Add(1) })
	j, err := sched.NewJob(gocron.DurationJob(100*time.Millisecond), task, gocron.WithName("report"))
	if err != nil {
		t.Fatal(err)
	}
	sched.Start()
	zktest.Eventually(t, 5*time.Second, "two runs", func() bool { return runs.Load() >= 2 })
	if _, err := sched.Update(j.ID(), gocron.DurationJob(150*time.Millisecond), task, gocron.WithName("report")); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 5*time.Second, "two runs after the update", func() bool { return runs.Load() >= 4 })
	if out := logs.String(); strings.Contains(out, "share one lock key") {
		t.Errorf("a job updated was taken for two jobs sharing a key:\n%s", out)
	}
}

// TestBadKeyTold (issue 50, item 5): a gocron job whose name cannot be a
// key (over runonce.MaxKeyLen bytes) never ran, and nothing was logged or
// observed (7 of 7 ticks): it is told once at Error, naming the job, and
// to the observer at each tick, as cronlock does.
func TestBadKeyTold(t *testing.T) {
	s, logs := logged(t, zktest.Servers(t))
	var told atomic.Int32
	l, err := gocronlock.NewLocker(s, zktest.Path(t), runonce.WithObserver(func(e runonce.Event) {
		if errors.Is(e.Err, runonce.ErrInvalidKey) && e.Outcome == runonce.Failed {
			told.Add(1)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sched, err := gocron.NewScheduler(gocron.WithDistributedLocker(l))
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Shutdown()
	name := strings.Repeat("k", runonce.MaxKeyLen+1)
	if _, err := sched.NewJob(gocron.DurationJob(100*time.Millisecond), gocron.NewTask(func() {}), gocron.WithName(name)); err != nil {
		t.Fatal(err)
	}
	sched.Start()
	zktest.Eventually(t, 5*time.Second, "three ticks told", func() bool { return told.Load() >= 3 })
	if n := strings.Count(logs.String(), "job name cannot be a key"); n != 1 {
		t.Errorf("%d lines of a name that cannot be a key, want 1:\n%s", n, logs.String())
	}
}
