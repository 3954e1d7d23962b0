package cronlock_test

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/tierlock/tierlock/cronlock"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// Issue 56, item 4: forgetting Attach, or a wrapper that hides the job
// from it, turned the fleet's guarantees off without a word. A Warn once
// per job, at its first fire.
func TestUnattachedWarned(t *testing.T) {
	t.Parallel()
	for _, form := range []string{"no Attach", "cron.Recover around Wrap"} {
		t.Run(form, func(t *testing.T) {
			t.Parallel()
			in := newInstance(t, zktest.Path(t))
			cr := cron.New(cron.WithSeconds(), cron.WithChain(in.locker.Wrapper()))
			job := cronlock.Named("report", cron.FuncJob(func() {}))
			if form != "no Attach" {
				cr = cron.New(cron.WithSeconds())
				attach(in.locker, cr)
				job = cron.NewChain(cron.Recover(cron.DiscardLogger), in.locker.Wrap("report")).Then(cron.FuncJob(func() {}))
			}
			if _, err := cr.AddJob("* * * * * *", job); err != nil {
				t.Fatal(err)
			}
			startCron(t, cr)
			time.Sleep(2500 * time.Millisecond)
			var warns []string
			for _, line := range strings.Split(in.logs.String(), "\n") {
				if strings.Contains(line, "level=WARN") && strings.Contains(line, "job=report") {
					warns = append(warns, line)
				}
			}
			if len(warns) != 1 {
				t.Errorf("%d warnings naming the job, want 1:\n%s", len(warns), in.logs.String())
			}
		})
	}
}

// TestWithChainAttaches: the short form, locker.WithChain, makes a Cron
// whose chain ends with the Locker's wrapper and which the Locker reads:
// a Named job inside a user's wrapper claims each tick by its scheduled
// time, and nothing is told.
func TestWithChainAttaches(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var ticks []time.Time
	in := newInstance(t, zktest.Path(t), runonce.WithObserver(func(e runonce.Event) {
		mu.Lock()
		ticks = append(ticks, e.Tick)
		mu.Unlock()
	}))
	cr := cron.New(cron.WithSeconds(), in.locker.WithChain(cron.Recover(cron.DiscardLogger)))
	var ran atomic.Int32
	if _, err := cr.AddJob("* * * * * *", cronlock.Named("report", cron.FuncJob(func() { ran.Add(1) }))); err != nil {
		t.Fatal(err)
	}
	startCron(t, cr)
	time.Sleep(2500 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(ticks) < 2 || ran.Load() < 2 || strings.Contains(in.logs.String(), "level=WARN") {
		t.Errorf("%d runs, ticks %v, told:\n%s", ran.Load(), ticks, in.logs.String())
	}
	for _, tick := range ticks {
		if tick.IsZero() || tick.Nanosecond() != 0 {
			t.Errorf("a tick claimed as %v, want its scheduled second", tick)
		}
	}
}
