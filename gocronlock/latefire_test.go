package gocronlock_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"

	"github.com/tierlock/tierlock/gocronlock"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// listSched is a gocron.Scheduler of one job whose scheduled times the
// test sets: the Locker reads only Jobs, and each job's Name, ID and
// NextRuns, so that a test plays what gocron v2.21.2's scheduler
// goroutine holds at each Lock (its nextScheduled list), however late it
// ran.
type listSched struct {
	gocron.Scheduler
	job *listJob
}

func (s *listSched) Jobs() []gocron.Job { return []gocron.Job{s.job} }

// listJob is listSched's job: NextRuns returns its list and, past its
// end, the times every period after, as gocron's does.
type listJob struct {
	gocron.Job
	name   string
	id     uuid.UUID
	period time.Duration
	mu     sync.Mutex
	list   []time.Time
}

func (j *listJob) Name() string  { return j.name }
func (j *listJob) ID() uuid.UUID { return j.id }

func (j *listJob) set(times ...time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.list = times
}

func (j *listJob) NextRuns(n int) ([]time.Time, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.list) == 0 {
		return nil, nil
	}
	out := append([]time.Time(nil), j.list[:min(n, len(j.list))]...)
	for len(out) < n {
		out = append(out, out[len(out)-1].Add(j.period))
	}
	return out, nil
}

func (j *listJob) NextRun() (time.Time, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.list) == 0 {
		return time.Time{}, nil
	}
	return j.list[0], nil
}

// TestLateCompletionFireNamed plays gocron's default mode on a loaded
// instance, deterministically: a runs tick T; gocron appends T+P to the
// job's times when the run is rescheduled, but the run's completion
// reaches its scheduler goroutine after T+P, and drops both. b runs T+P on
// time; a's fire of T+P comes 700 ms late and its Lock finds no time at
// all. It is the fire of T+P, which a saw coming at T's Lock: stale, not
// run again.
func TestLateCompletionFireNamed(t *testing.T) {
	const period = 2 * time.Second
	root := zktest.Path(t)
	var seen events
	a, _ := newLocker(t, root, runonce.WithInstanceName("a"), runonce.WithObserver(seen.observe))
	b, _ := newLocker(t, root, runonce.WithInstanceName("b"))
	job := &listJob{name: "report", id: uuid.New(), period: period}
	a.Attach(&listSched{job: job})
	bJob := &listJob{name: "report", id: uuid.New(), period: period}
	b.Attach(&listSched{job: bJob})
	ctx := zktest.Context(t, 20*time.Second)
	tick := time.Now().Truncate(time.Second).Add(time.Second)

	time.Sleep(time.Until(tick))
	job.set(tick)
	if ran, err := runOnce(ctx, a, "report", nil); !ran {
		t.Fatalf("a's fire of T, on time: %v", err)
	}
	job.set() // T and T+P dropped by the completion, processed after T+P

	next := tick.Add(period)
	time.Sleep(time.Until(next))
	bJob.set(next)
	if ran, err := runOnce(ctx, b, "report", nil); !ran {
		t.Fatalf("b's fire of T+P, on time: %v", err)
	}

	time.Sleep(time.Until(next.Add(700 * time.Millisecond)))
	from := len(seen.since(0))
	ran, err := runOnce(ctx, a, "report", nil)
	if ran {
		t.Fatalf("a's fire of T+P, 700 ms late, its time dropped: ran, where b ran T+P (%v)", seen.since(from))
	}
	got := seen.since(from)
	if len(got) != 1 || !got[0].Tick.Equal(next) || !errors.Is(err, runonce.ErrStale) {
		t.Errorf("a's late fire of T+P: %v, events %+v; want stale, named T+P (%v)", err, got, next)
	}
}

// TestRunNowClaimedByItsTime: a RunNow between two ticks finds no
// scheduled time come since the job's last Lock: it is claimed by its own
// time and runs, told at Info.
func TestRunNowClaimedByItsTime(t *testing.T) {
	s, logs := logged(t, zktest.Servers(t))
	var seen events
	l, err := gocronlock.NewLocker(s, zktest.Path(t), runonce.WithObserver(seen.observe))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sched, err := l.NewScheduler()
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Shutdown()
	first := time.Now().Truncate(time.Second).Add(time.Second)
	j, err := sched.NewJob(gocron.DurationJob(2*time.Second), gocron.NewTask(func() {}), gocron.WithName("report"),
		gocron.WithStartAt(gocron.WithStartDateTime(first)))
	if err != nil {
		t.Fatal(err)
	}
	sched.Start()
	time.Sleep(time.Until(first.Add(time.Second)))
	from := len(seen.since(0))
	if err := j.RunNow(); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 5*time.Second, "the RunNow's run", func() bool { return len(seen.since(from)) > 0 })
	got := seen.since(from)
	if got[0].Outcome != runonce.Ran || !got[0].Tick.IsZero() {
		t.Errorf("a RunNow between ticks: %s, tick %v (%v); want ran, claimed without a tick", got[0].Outcome, got[0].Tick, got[0].Err)
	}
	if !strings.Contains(logs.String(), "a RunNow") {
		t.Errorf("the RunNow not told:\n%s", logs.String())
	}
}
