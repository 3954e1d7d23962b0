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

// TestAttachSkipsStaleTicks (issues 50, item 7, and 56): the fleet (b)
// ran a tick on time; gocron, on a clock 2 s behind (a fake clock, as a
// process stopped 2 s sees its timers), fires that tick 1 s after its
// scheduled time. Attached, the Locker claims the run by its scheduled
// tick (the job's NextRun while Lock runs): the fleet ran it, so it is
// stale, skipped and said so. (A late tick no instance ran: runonce's
// TestClaimTickStale; ticks on time run: the fleet tests,
// ExampleNewLocker.)
func TestAttachSkipsStaleTicks(t *testing.T) {
	root := zktest.Path(t)
	s, logs := logged(t, zktest.Servers(t))
	var mu sync.Mutex
	var outcomes []string
	l, err := gocronlock.NewLocker(s, root, runonce.WithObserver(func(e runonce.Event) {
		mu.Lock()
		outcomes = append(outcomes, e.Outcome.String())
		mu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b, err := runonce.New(zktest.Connect(t, zktest.Servers(t)), root) // an instance of the fleet, attached
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	tick := time.Now().Truncate(time.Millisecond)
	c, err := b.ClaimTick(zktest.Context(t, 5*time.Second), "report", tick)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Release()
	time.Sleep(time.Second)
	clock := clockwork.NewFakeClockAt(tick.Add(-time.Second))
	late, err := gocron.NewScheduler(gocron.WithDistributedLocker(l), gocron.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer late.Shutdown()
	l.Attach(late)
	if _, err := late.NewJob(gocron.DurationJob(time.Second), gocron.NewTask(func() {}), gocron.WithName("report"),
		gocron.WithStartAt(gocron.WithStartDateTime(tick))); err != nil {
		t.Fatal(err)
	}
	late.Start()
	time.Sleep(100 * time.Millisecond)
	clock.Advance(time.Second) // the tick b ran, a second ago, fires now
	zktest.Eventually(t, 5*time.Second, "the late tick's Lock", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(outcomes) > 0
	})
	mu.Lock()
	got := strings.Join(outcomes, " ")
	mu.Unlock()
	if got != "stale" || !strings.Contains(logs.String(), "stale ticks skipped") {
		t.Errorf("a tick the fleet ran, 1 s late: outcomes %q, want stale, told:\n%s", got, logs.String())
	}
}
