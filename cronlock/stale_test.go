package cronlock_test

import (
	"errors"
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

// replay is a schedule whose first time is its tick, seconds ago, and then
// none: robfig/cron fires it at once, late, with that tick as its
// Entry.Prev, as it fires the ticks a stopped process slept through.
type replay struct {
	tick  time.Time
	fired atomic.Bool
}

func (r *replay) Next(time.Time) time.Time {
	if r.fired.CompareAndSwap(false, true) {
		return r.tick
	}
	return time.Now().AddDate(10, 0, 0)
}

// TestStaleTickSkipped (issue 50, item 7): a runs "report" every second
// with a robfig/cron Cron; 700 ms after a tick, b's Cron fires a tick of
// "report" scheduled 2 s before (robfig/cron's replay after a stop: 4.1 s
// late after a 5-s SIGSTOP). The rule dated the claim by the server's
// clock, found no run within the window (a's last, 700 ms before) and ran
// it: a tick that a ran 4 s before, run again (by robfig/cron's scheduled
// time, Entry.Prev). With the Cron attached, the Locker claims the tick by
// its scheduled time: stale, skipped, observed as stale and said so.
func TestStaleTickSkipped(t *testing.T) {
	for _, form := range []string{"Named", "Wrap inside a wrapper"} {
		t.Run(form, func(t *testing.T) { staleTickSkipped(t, form == "Named") })
	}
}

// unwrapper is a user's wrapper of a job, with the Unwrap method by which
// Attach finds the job Wrap wrapped inside it.
type unwrapper struct{ next cron.Job }

func (u unwrapper) Run()             { u.next.Run() }
func (u unwrapper) Unwrap() cron.Job { return u.next }

// staleTickSkipped is TestStaleTickSkipped with b's job added Named, under
// Wrapper, or wrapped by Wrap inside a wrapper of its own.
func staleTickSkipped(t *testing.T, isNamed bool) {
	root := zktest.Path(t)
	var mu sync.Mutex
	ran := map[time.Time][]string{}
	record := func(who string, tickOf func() time.Time) cron.Job {
		return cron.FuncJob(func() {
			tick := tickOf()
			mu.Lock()
			defer mu.Unlock()
			ran[tick] = append(ran[tick], who)
		})
	}
	a := newInstance(t, root)
	ca := cron.New(cron.WithSeconds(), cron.WithChain(a.locker.Wrapper()))
	attach(a.locker, ca)
	var ida cron.EntryID
	ida, err := ca.AddJob("* * * * * *", cronlock.Named("report", record("a", func() time.Time { return ca.Entry(ida).Prev })))
	if err != nil {
		t.Fatal(err)
	}
	var stale atomic.Int32
	b := newInstance(t, root, runonce.WithObserver(func(e runonce.Event) {
		if e.Outcome.String() == "stale" && errors.Is(e.Err, runonce.ErrSkipped) {
			stale.Add(1)
		}
	}))
	cb := cron.New(cron.WithSeconds(), cron.WithChain(b.locker.Wrapper()))
	if !isNamed {
		cb = cron.New(cron.WithSeconds()) // Wrap's, without Wrapper
	}
	attach(b.locker, cb)
	startCron(t, ca)
	startCron(t, cb)
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(3700 * time.Millisecond)))
	tick := time.Now().Truncate(time.Second).Add(-2 * time.Second) // a ran it
	bRun := record("b", func() time.Time { return tick })          // the replay's one fire
	job := cronlock.Named("report", bRun)
	if !isNamed {
		job = unwrapper{b.locker.Wrap("report")(bRun)}
	}
	cb.Schedule(&replay{tick: tick}, job)
	time.Sleep(600 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if who := ran[tick]; len(who) != 1 {
		t.Errorf("the tick of %v ran on %v, want once", tick.Format("15:04:05"), who)
	}
	if stale.Load() != 1 || !strings.Contains(b.logs.String(), "stale ticks skipped") {
		t.Errorf("b's stale fire observed as stale %d times, want 1; told:\n%s", stale.Load(), b.logs.String())
	}
}
