package gocronlock_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/tierlock/tierlock/gocronlock"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// tickRuns gathers a scene's runs, each by the tick it ran: the one its
// Locker claimed (runonce.TickOf), or, for a run claimed without one, the
// last of the schedule's ticks at its start (a late fire runs after its
// tick, never before it).
type tickRuns struct {
	mu     sync.Mutex
	first  time.Time
	period time.Duration
	runs   map[string][]string // tick (seconds from first) -> "instance named|unnamed"
}

func newTickRuns(first time.Time, period time.Duration) *tickRuns {
	return &tickRuns{first: first, period: period, runs: map[string][]string{}}
}

// task returns the job's task on instance, whose Locker is l.
func (tr *tickRuns) task(instance string, l *gocronlock.Locker, job string) func() {
	return func() {
		now := time.Now()
		tick, named := runonce.TickOf(l.RunContext(job))
		how := "named"
		if !named {
			how = "unnamed at " + now.Sub(tr.first).Round(time.Millisecond).String()
			tick = tr.first.Add(now.Sub(tr.first).Truncate(tr.period))
		}
		tr.mu.Lock()
		defer tr.mu.Unlock()
		k := tick.Sub(tr.first).String()
		tr.runs[k] = append(tr.runs[k], instance+" "+how)
	}
}

// scheduler is a scheduler made by l (Locker.NewScheduler, with opts)
// whose job "tick" runs every tr.period from start as instance's task.
func (tr *tickRuns) scheduler(t *testing.T, l *gocronlock.Locker, instance string, start time.Time, opts ...gocron.SchedulerOption) gocron.Scheduler {
	t.Helper()
	s, err := l.NewScheduler(opts...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.NewJob(gocron.DurationJob(tr.period), gocron.NewTask(tr.task(instance, l, "tick")), gocron.WithName("tick"),
		gocron.WithStartAt(gocron.WithStartDateTime(start))); err != nil {
		t.Fatal(err)
	}
	return s
}

// doubles returns the ticks run more than once, with their runs, and the
// count of runs.
func (tr *tickRuns) doubles() ([]string, int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []string
	n := 0
	for k, rs := range tr.runs {
		n += len(rs)
		if len(rs) > 1 {
			out = append(out, fmt.Sprintf("+%s: %s", k, strings.Join(rs, ", ")))
		}
	}
	slices.Sort(out)
	return out, n
}

// String lists the runs by tick.
func (tr *tickRuns) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []string
	for k, rs := range tr.runs {
		out = append(out, fmt.Sprintf("+%s: %s", k, strings.Join(rs, ", ")))
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// TestQueuedFiresRunOnce: two instances made with Locker.NewScheduler, a
// job every 2 s on both; on instance a, gocron's wait limit of one job at
// a time (gocron.WithLimitConcurrentJobs(1, gocron.LimitModeWait)) and a
// 4.8-s report beside it, so that the job's fires queue behind the report.
// When the report ends, the first queued fire is named by its tick and
// refused as stale; gocron then drops the job's past scheduled times, and
// the next queued fire's Lock finds NextRun ahead of now. That fire is not
// a RunNow: no tick may run twice, and every fire the Locker cannot name
// is told.
func TestQueuedFiresRunOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("a scene of 9 s: -short")
	}
	const period = 2 * time.Second
	root := zktest.Path(t)
	var seen events
	sa, logs := logged(t, zktest.Servers(t))
	a, err := gocronlock.NewLocker(sa, root, runonce.WithInstanceName("a"), runonce.WithObserver(seen.observe))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, _ := newLocker(t, root, runonce.WithInstanceName("b"))
	first := time.Now().Truncate(time.Second).Add(2 * time.Second)
	tr := newTickRuns(first, period)
	sb := tr.scheduler(t, b, "b", first)
	sa2 := tr.scheduler(t, a, "a", first, gocron.WithLimitConcurrentJobs(1, gocron.LimitModeWait))
	if _, err := sa2.NewJob(gocron.DurationJob(3*period), gocron.NewTask(func() { time.Sleep(4800 * time.Millisecond) }),
		gocron.WithName("report"), gocron.WithStartAt(gocron.WithStartDateTime(first.Add(900*time.Millisecond)))); err != nil {
		t.Fatal(err)
	}
	sb.Start()
	sa2.Start()
	// Ticks +0 to +6: the report runs from +0.9 to +5.7, and the job's
	// fires of +2 and +4 wait behind it.
	time.Sleep(time.Until(first.Add(6*time.Second + 500*time.Millisecond)))
	if err := sa2.Shutdown(); err != nil {
		t.Error(err)
	}
	if err := sb.Shutdown(); err != nil {
		t.Error(err)
	}
	twice, n := tr.doubles()
	if len(twice) > 0 {
		t.Errorf("%d ticks ran twice (%d runs): %s\ninstance a's log:\n%s", len(twice), n, strings.Join(twice, "; "), logs.String())
	}
	// Every Lock of a fire a named no tick for was told: observed
	// as unknown, and logged.
	for _, e := range seen.since(0) {
		if e.Job == "tick" && e.Tick.IsZero() && e.Outcome != runonce.SkippedUnknown {
			t.Errorf("a Lock of instance a claimed without a tick: %s (%v) at +%v", e.Outcome, e.Err, e.Entry.Sub(first).Round(time.Millisecond))
		}
	}
	t.Logf("%d runs (%s); instance a's log:\n%s", n, tr, logs.String())
}
