package cronlock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/tierlock/tierlock/cronlock"
	"github.com/tierlock/tierlock/internal/zktest"
)

// TestEveryOncePerPeriod (issue 56, item 5): two instances of a job
// "@every 2s", the second's phase a second after the first's (robfig/cron
// counts @every from when the job was added: a pause moves it so). Each
// instance's ticks were a second from the other's, more than the window:
// the job ran on both, twice per period. Attached, an @every job runs
// once per period across the fleet, whatever the phases.
func TestEveryOncePerPeriod(t *testing.T) {
	t.Parallel()
	root := zktest.Path(t)
	var mu sync.Mutex
	var ran []time.Time
	job := cron.FuncJob(func() {
		mu.Lock()
		ran = append(ran, time.Now())
		mu.Unlock()
	})
	a, b := newInstance(t, root), newInstance(t, root)
	ca := cron.New(cron.WithSeconds(), cron.WithChain(a.locker.Wrapper()))
	cb := cron.New(cron.WithSeconds(), cron.WithChain(b.locker.Wrapper()))
	attach(a.locker, ca)
	attach(b.locker, cb)
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))
	if _, err := ca.AddJob("@every 2s", cronlock.Named("report", job)); err != nil {
		t.Fatal(err)
	}
	startCron(t, ca)
	time.Sleep(time.Second)
	if _, err := cb.AddJob("@every 2s", cronlock.Named("report", job)); err != nil {
		t.Fatal(err)
	}
	startCron(t, cb)
	time.Sleep(9 * time.Second)
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(ran); i++ {
		if gap := ran[i].Sub(ran[i-1]); gap < 1500*time.Millisecond {
			t.Errorf("runs %v apart, want one per 2-s period (runs at %v)", gap.Round(time.Millisecond), ran)
			break
		}
	}
	if len(ran) < 4 {
		t.Errorf("%d runs in 10 s, want one per period", len(ran))
	}
}
