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

// TestNilJobRefused (issue 50, item 5): a fleet of two Crons, the first
// (its timer first) with the job Named("report", nil), the second with the
// job itself. The first claimed every tick and ran nothing, without a
// line: the job never ran (10 of 10). A nil job is refused where it is
// added, said once at Error, told to the observer at each tick, and never
// claims: the second runs every tick.
func TestNilJobRefused(t *testing.T) {
	root := zktest.Path(t)
	var refused atomic.Int32
	a := newInstance(t, root, runonce.WithObserver(func(e runonce.Event) {
		if errors.Is(e.Err, runonce.ErrNil) {
			refused.Add(1)
		}
	}))
	b := newInstance(t, root)
	ca := cron.New(cron.WithSeconds(), cron.WithChain(a.locker.Wrapper()))
	if _, err := ca.AddJob("* * * * * *", cronlock.Named("report", nil)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a.logs.String(), "level=ERROR") || !strings.Contains(a.logs.String(), "job=report") {
		t.Errorf("no Error naming the nil job at AddJob:\n%s", a.logs.String())
	}
	var ran atomic.Int32
	cb := cron.New(cron.WithSeconds(), cron.WithChain(delay(150*time.Millisecond), b.locker.Wrapper()))
	if _, err := cb.AddJob("* * * * * *", cronlock.Named("report", cron.FuncJob(func() { ran.Add(1) }))); err != nil {
		t.Fatal(err)
	}
	startCron(t, ca)
	startCron(t, cb)
	time.Sleep(3500 * time.Millisecond)
	if n := ran.Load(); n < 3 || refused.Load() < 3 {
		t.Errorf("the job ran %d times in 3 ticks (%d ticks of the nil one told), want every tick", n, refused.Load())
	}
}

// TestEmptyNameRefused (issue 50, item 5): Named("", job) under Wrapper
// was not refused at AddJob, and was told at its ticks as an invalid key:
// it is a job without a name (an Error at AddJob, ErrUnnamedJob to the
// observer), as cron.AddFunc's.
func TestEmptyNameRefused(t *testing.T) {
	var mu sync.Mutex
	var errs []error
	in := newInstance(t, zktest.Path(t), runonce.WithObserver(func(e runonce.Event) {
		mu.Lock()
		errs = append(errs, e.Err)
		mu.Unlock()
	}))
	c := cron.New(cron.WithSeconds(), cron.WithChain(in.locker.Wrapper()))
	if _, err := c.AddJob("* * * * * *", cronlock.Named("", cron.FuncJob(func() {}))); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(in.logs.String(), "job without a name") {
		t.Errorf("no Error at AddJob:\n%s", in.logs.String())
	}
	startCron(t, c)
	zktest.Eventually(t, 5*time.Second, "a tick told", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(errs) > 0
	})
	mu.Lock()
	defer mu.Unlock()
	if !errors.Is(errs[0], cronlock.ErrUnnamedJob) {
		t.Errorf("the tick told as %v, want ErrUnnamedJob", errs[0])
	}
}

// TestDelayedReplacedJob (issue 50, item 8): with cron.DelayIfStillRunning
// before the Locker's wrapper, a job's tick waits for its run of the tick
// before; the job is replaced under its name meanwhile (c.Remove, and
// AddJob again). The delayed tick of the removed job reached the Locker
// after the removal: it ran the removed job, and a later one logged a
// false "several jobs of this process share one name". With the Cron
// attached, the removed job's late tick is not run, and nothing is said.
func TestDelayedReplacedJob(t *testing.T) {
	in := newInstance(t, zktest.Path(t), runonce.WithWindow(100*time.Millisecond))
	c := cron.New(cron.WithSeconds(), cron.WithChain(cron.DelayIfStillRunning(cron.DiscardLogger), in.locker.Wrapper()))
	attach(in.locker, c)
	var oldRuns, newRuns atomic.Int32
	started := make(chan struct{}, 10)
	id, err := c.AddJob("* * * * * *", cronlock.Named("report", cron.FuncJob(func() {
		oldRuns.Add(1)
		started <- struct{}{}
		time.Sleep(1500 * time.Millisecond)
	})))
	if err != nil {
		t.Fatal(err)
	}
	startCron(t, c)
	<-started                                                                             // the old job's first run, 1.5 s long
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1200 * time.Millisecond))) // its next tick waits
	c.Remove(id)
	removed := oldRuns.Load()
	if _, err := c.AddJob("* * * * * *", cronlock.Named("report", cron.FuncJob(func() { newRuns.Add(1) }))); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	if n := oldRuns.Load(); n != removed {
		t.Errorf("the removed job ran %d times after its removal", n-removed)
	}
	if strings.Contains(in.logs.String(), "share one name") || newRuns.Load() == 0 {
		t.Errorf("the replaced job (%d runs) told as a shared name, or not run:\n%s", newRuns.Load(), in.logs.String())
	}
}
