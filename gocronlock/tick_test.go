package gocronlock_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/jonboulle/clockwork"

	"github.com/tierlock/tierlock/gocronlock"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// TestAttachSkipsStaleTicks (issue 50, item 7): gocron, on a clock 5 s
// behind the server's (a fake clock, as a process stopped 5 s sees its
// timers), fires a job's tick 4 s after its scheduled time. Attached, the
// Locker claims the run by its scheduled tick (the job's NextRun while
// Lock runs): stale, skipped and said so. (Ticks on time run: the fleet
// tests, ExampleNewLocker.)
func TestAttachSkipsStaleTicks(t *testing.T) {
	s, logs := logged(t, zktest.Servers(t))
	var mu sync.Mutex
	var outcomes []string
	l, err := gocronlock.NewLocker(s, zktest.Path(t), runonce.WithObserver(func(e runonce.Event) {
		mu.Lock()
		outcomes = append(outcomes, e.Outcome.String())
		mu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	clock := clockwork.NewFakeClockAt(time.Now().Add(-5 * time.Second))
	late, err := gocron.NewScheduler(gocron.WithDistributedLocker(l), gocron.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer late.Shutdown()
	l.Attach(late)
	if _, err := late.NewJob(gocron.DurationJob(time.Second), gocron.NewTask(func() {}), gocron.WithName("report"),
		gocron.WithStartAt(gocron.WithStartDateTime(clock.Now().Add(time.Second)))); err != nil {
		t.Fatal(err)
	}
	late.Start()
	time.Sleep(100 * time.Millisecond)
	clock.Advance(time.Second) // the tick of 4 s ago fires now
	zktest.Eventually(t, 5*time.Second, "the late tick's Lock", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(outcomes) > 0
	})
	mu.Lock()
	got := strings.Join(outcomes, " ")
	mu.Unlock()
	if got != "stale" || !strings.Contains(logs.String(), "stale ticks skipped") {
		t.Errorf("a tick 4 s late: outcomes %q, want stale, told:\n%s", got, logs.String())
	}
}
