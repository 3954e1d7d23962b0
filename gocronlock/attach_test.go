package gocronlock_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/tierlock/tierlock/gocronlock"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// events gathers the observer's events.
type events struct {
	mu   sync.Mutex
	list []runonce.Event
}

func (e *events) observe(ev runonce.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, ev)
}

// since returns the events from the i-th on.
func (e *events) since(i int) []runonce.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]runonce.Event(nil), e.list[min(i, len(e.list)):]...)
}

// TestReaddedJobReadAgain (issue 56, item 4): a job removed from the
// scheduler and added again under its name: Attach kept the removed job's
// handle, whose NextRun fails, and claimed the new job's ticks by their
// Lock's time (a late one ran again). It reads the scheduler again: the new
// job's ticks are claimed by their scheduled time.
func TestReaddedJobReadAgain(t *testing.T) {
	var seen events
	l, _ := newLocker(t, zktest.Path(t), runonce.WithObserver(seen.observe))
	sched, err := gocron.NewScheduler(gocron.WithDistributedLocker(l))
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Shutdown()
	l.Attach(sched)
	add := func() gocron.Job {
		j, err := sched.NewJob(gocron.DurationJob(time.Second), gocron.NewTask(func() {}), gocron.WithName("report"),
			gocron.WithStartAt(gocron.WithStartDateTime(time.Now().Truncate(time.Second).Add(time.Second))))
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	old := add()
	sched.Start()
	time.Sleep(2500 * time.Millisecond)
	if err := sched.RemoveJob(old.ID()); err != nil {
		t.Fatal(err)
	}
	from := len(seen.since(0))
	add()
	time.Sleep(2500 * time.Millisecond)
	got := seen.since(from)
	if len(got) == 0 {
		t.Fatal("the job added again never ticked")
	}
	for _, e := range got {
		if e.Tick.IsZero() {
			t.Errorf("the job added again: a tick claimed without its scheduled time (%s, %v)", e.Outcome, e.Err)
		}
	}
}

// TestUnattachedLockerWarned (issue 56, item 4): a Locker whose scheduler
// is not attached claims every tick by its Lock's time, and a tick gocron
// fires late runs again: a Warn once per job says so.
func TestUnattachedLockerWarned(t *testing.T) {
	s, logs := logged(t, zktest.Servers(t))
	l, err := gocronlock.NewLocker(s, zktest.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sched, err := gocron.NewScheduler(gocron.WithDistributedLocker(l))
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Shutdown()
	if _, err := sched.NewJob(gocron.DurationJob(time.Second), gocron.NewTask(func() {}), gocron.WithName("report")); err != nil {
		t.Fatal(err)
	}
	sched.Start()
	time.Sleep(2500 * time.Millisecond)
	n := 0
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "job=report") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d warnings naming the job, want 1:\n%s", n, logs.String())
	}
}

var _ = gocronlock.NewLocker
