package fleet

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
)

// noLock lets every run run.
type noLock struct{}

func (noLock) Lock(context.Context, string) (gocron.Lock, error) { return noLock{}, nil }
func (noLock) Unlock(context.Context) error                      { return nil }

// told signals each JobSchedulingDelay that has returned.
type told struct {
	*monitor
	returned chan struct{}
}

func (m told) JobSchedulingDelay(job gocron.Job, scheduled, started time.Time) {
	m.monitor.JobSchedulingDelay(job, scheduled, started)
	select {
	case m.returned <- struct{}{}:
	default:
	}
}

// TestOverlappingRunsKeepTheirTimes: two runs of one job under way at once
// on one instance are each recorded with their own scheduled time. The
// first run's task is held before it takes its times until the second
// run's notification has returned, or a second has passed: a monitor that kept one value per job gave the first
// task the second run's time, and both runs were recorded as one tick run
// twice, 0 s apart (an idle make test's TestFleetScale).
func TestOverlappingRunsKeepTheirTimes(t *testing.T) {
	const period = 100 * time.Millisecond
	mon := told{monitor: &monitor{}, returned: make(chan struct{}, 1)}
	sched, err := gocron.NewScheduler(gocron.WithDistributedLocker(noLock{}), gocron.WithSchedulerMonitor(mon))
	if err != nil {
		t.Fatal(err)
	}
	var (
		runs atomic.Int32
		mu   sync.Mutex
		got  []time.Time
		done = make(chan struct{})
	)
	task := gocron.NewTask(func() {
		if runs.Add(1) == 1 {
			// The first run held between its notification and its take,
			// as gocron's executor holds it while the scheduler loop is
			// busy (its sends after the next run is scheduled).
			<-mon.returned // its own notification
			select {
			case <-mon.returned: // the second run's
			case <-time.After(time.Second):
			}
		}
		times, ok := mon.take("job")
		if !ok {
			t.Error("a run without its times")
		}
		mu.Lock()
		defer mu.Unlock()
		got = append(got, times.scheduled)
		if len(got) == 2 {
			close(done)
		}
	})
	if _, err := sched.NewJob(gocron.DurationJob(period), task, gocron.WithName("job"),
		gocron.WithStartAt(gocron.WithStartDateTime(time.Now().Add(period)))); err != nil {
		t.Fatal(err)
	}
	sched.Start()
	defer func() {
		if err := sched.Shutdown(); err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("two runs did not end in 10 s")
	}
	mu.Lock()
	defer mu.Unlock()
	// The two runs append in either order once the first is let go (make
	// test run 77: the second first, -100ms): each its own time is what
	// counts.
	if gap := got[1].Sub(got[0]).Abs(); gap < period/2 {
		t.Errorf("the two runs were recorded with scheduled times %v apart (%v, %v): one run's time given to both", gap, got[0], got[1])
	}
}
