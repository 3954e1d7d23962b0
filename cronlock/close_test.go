package cronlock_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/tierlock/tierlock/cronlock"
	"github.com/tierlock/tierlock/internal/zktest"
)

// TestCloseDuringATick (issue 50, item 3), with two real robfig/cron
// Crons: a's Locker is closed 2 ms after a's tick fires, while its claim
// is under way; b's timer fires 150 ms later. The claim's write counted as
// the tick's run, its run failed on the closed lock, and b skipped the
// tick as already run: it ran nowhere (8 of 8). Now a's claim either
// writes and runs or leaves the tick to b: each tick runs.
func TestCloseDuringATick(t *testing.T) {
	root := zktest.Path(t)
	b := newInstance(t, root)
	var ran atomic.Int32
	cb := cron.New(cron.WithSeconds(), cron.WithChain(delay(150*time.Millisecond), b.locker.Wrapper()))
	if _, err := cb.AddJob("* * * * * *", cronlock.Named("report", cron.FuncJob(func() { ran.Add(1) }))); err != nil {
		t.Fatal(err)
	}
	startCron(t, cb)
	const rounds = 4
	lost := 0
	for range rounds {
		a := newInstance(t, root)
		closeOnFire := func(j cron.Job) cron.Job {
			return cron.FuncJob(func() {
				go func() {
					time.Sleep(2 * time.Millisecond)
					_ = a.locker.Close()
				}()
				j.Run()
			})
		}
		ca := cron.New(cron.WithSeconds(), cron.WithChain(closeOnFire, a.locker.Wrapper()))
		if _, err := ca.AddJob("* * * * * *", cronlock.Named("report", cron.FuncJob(func() { ran.Add(1) }))); err != nil {
			t.Fatal(err)
		}
		tick := time.Now().Truncate(time.Second).Add(2 * time.Second)
		time.Sleep(time.Until(tick.Add(-300 * time.Millisecond))) // a starts before the tick
		before := ran.Load()
		ca.Start()
		time.Sleep(time.Until(tick.Add(600 * time.Millisecond))) // the tick, a's and b's
		<-ca.Stop().Done()
		if ran.Load() == before {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d ticks whose claim a's Close cut ran nowhere", lost, rounds)
	}
}
