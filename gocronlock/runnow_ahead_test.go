package gocronlock_test

import (
	"strings"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/tierlock/tierlock/gocronlock"
	"github.com/tierlock/tierlock/internal/hostclock"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// TestRunNowFromAClockAhead: b, an instance whose host clock reads 30 s
// ahead of a's, runs the job once with gocron's RunNow, between two of
// a's ticks; a, attached, runs the job every second. The RunNow is
// claimed without a tick, and its fire, by b's clock, was the floor every
// tick had to clear: a's next five ticks ran nowhere, each "unknown: the
// fleet may have run them", and no line named the clocks. Now each runs,
// once, and a says once that the clocks differ, naming them.
func TestRunNowFromAClockAhead(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a job every second, about 8 s")
	}
	root := zktest.Path(t)
	opts := []runonce.Option{runonce.WithWindow(300 * time.Millisecond)}
	sa, logs := logged(t, zktest.Servers(t))
	var seen events
	a, err := gocronlock.NewLocker(sa, root, append(opts, runonce.WithInstanceName("a"), runonce.WithObserver(seen.observe))...)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var bSeen events
	b, err := gocronlock.NewLocker(zktest.Connect(t, zktest.Servers(t)), root, append(opts, runonce.WithInstanceName("b"), runonce.WithObserver(bSeen.observe))...)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	first := time.Now().Truncate(time.Second).Add(time.Second)
	task := gocron.NewTask(func() {})
	sa1 := newSched(t, a)
	if _, err := sa1.NewJob(gocron.DurationJob(time.Second), task, gocron.WithName("report"),
		gocron.WithStartAt(gocron.WithStartDateTime(first))); err != nil {
		t.Fatal(err)
	}
	sb := newSched(t, b)
	bJob, err := sb.NewJob(gocron.DurationJob(time.Second), task, gocron.WithName("report"),
		gocron.WithStartAt(gocron.WithStartDateTime(first.Add(time.Hour)))) // b only runs it now
	if err != nil {
		t.Fatal(err)
	}
	sa1.Start()
	sb.Start()
	time.Sleep(time.Until(first.Add(1500 * time.Millisecond)))
	hostclock.SetOffset(30 * time.Second) // b's clock, for its RunNow alone
	if err := bJob.RunNow(); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 5*time.Second, "b's RunNow", func() bool { return len(bSeen.since(0)) > 0 })
	hostclock.SetOffset(0)
	if ev := bSeen.since(0)[0]; ev.Outcome != runonce.Ran || !ev.Tick.IsZero() {
		t.Fatalf("b's RunNow: %s, tick %v (%v); want ran, claimed without a tick", ev.Outcome, ev.Tick, ev.Err)
	}
	from := first.Add(2 * time.Second)
	time.Sleep(time.Until(from.Add(4*time.Second + 300*time.Millisecond)))
	var said []string
	for _, ev := range seen.since(0) {
		if !ev.Tick.Before(from) && ev.Tick.Before(from.Add(5*time.Second)) {
			said = append(said, ev.Outcome.String())
		}
	}
	if got := strings.Join(said, " "); got != "ran ran ran ran ran" {
		t.Errorf("a's five ticks after b's RunNow: %q, want each ran once\n%s", got, logs)
	}
	out := logs.String()
	if strings.Count(out, "clocks differ") != 1 || !strings.Contains(out, "its host's clock ahead") || !strings.Contains(out, "its_fire=") || !strings.Contains(out, "this_host_clock=") {
		t.Errorf("want one line naming the clocks:\n%s", out)
	}
}

// newSched returns a scheduler of l's, shut down when the test ends.
func newSched(t *testing.T, l *gocronlock.Locker) gocron.Scheduler {
	t.Helper()
	s, err := l.NewScheduler()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown() })
	return s
}
