package cronlock_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/tierlock/tierlock/cronlock"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// TestDelayedTickRuns (issue 56, item 6): a one-instance fleet whose job
// outlasts its period under cron.DelayIfStillRunning: each tick waits for
// the run before, and fires late. The Locker skipped it as stale, told
// "this process was stopped ... the fleet ran them" (nobody did), the
// lines flapping with each tick. A tick no instance ran runs, late.
func TestDelayedTickRuns(t *testing.T) {
	t.Parallel()
	var seen outcomes
	in := newInstance(t, zktest.Path(t), runonce.WithObserver(seen.observe))
	cr := cron.New(cron.WithSeconds(), cron.WithChain(cron.DelayIfStillRunning(cron.DiscardLogger), in.locker.Wrapper()))
	attach(in.locker, cr)
	var runs atomic.Int32
	if _, err := cr.AddJob("* * * * * *", cronlock.Named("report", cron.FuncJob(func() {
		runs.Add(1)
		time.Sleep(1600 * time.Millisecond)
	}))); err != nil {
		t.Fatal(err)
	}
	startCron(t, cr)
	time.Sleep(5500 * time.Millisecond)
	got := seen.String()
	if strings.Contains(got, "stale") || strings.Contains(in.logs.String(), "stale") || runs.Load() < 3 {
		t.Errorf("%d runs, outcomes %q: want every tick run, late, none told stale:\n%s", runs.Load(), got, in.logs.String())
	}
}
