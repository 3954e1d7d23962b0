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

// Issue 56, item 3: jobs written as users write them.

// outcomes gathers an instance's observed outcomes, in order.
type outcomes struct {
	mu   sync.Mutex
	list []string
}

func (o *outcomes) observe(e runonce.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.list = append(o.list, e.Outcome.String())
}

func (o *outcomes) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.list, " ")
}

// myJob is a user's job type, added as a nil pointer.
type myJob struct{ n int }

func (j *myJob) Run() { j.n++ }

// TestNilFuncRefused: Named("report", cron.FuncJob(f)) with a nil f (a
// handler missing from a map), and a nil *myJob, passed the nil-job
// refusal: the instance claimed every tick, the job panicked inside the
// claim, cron.Recover swallowed it, and the observer said ran: the fleet's
// run of each tick made by no one. Both are refused where they are added:
// an Error, no claim (no run node), the observer told failed.
func TestNilFuncRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		job  cron.Job
	}{
		{"nil func", cron.FuncJob(nil)},
		{"nil pointer", (*myJob)(nil)},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var seen outcomes
			in := newInstance(t, zktest.Path(t), runonce.WithObserver(seen.observe))
			cr := cron.New(cron.WithSeconds(), cron.WithChain(cron.Recover(cron.DiscardLogger), in.locker.Wrapper()))
			attach(in.locker, cr)
			if _, err := cr.AddJob("* * * * * *", cronlock.Named("report", c.job)); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(in.logs.String(), "level=ERROR") {
				t.Errorf("no Error at AddJob:\n%s", in.logs.String())
			}
			startCron(t, cr)
			time.Sleep(2500 * time.Millisecond)
			last, err := in.locker.LastRun(zktest.Context(t, 5*time.Second), "report")
			if got := seen.String(); strings.Contains(got, "ran") || got == "" || err != nil || !last.At.IsZero() {
				t.Errorf("outcomes %q, last run %v (%v): want failed only, and no claim", got, last.At, err)
			}
		})
	}
}

// TestPanickingRunFailed: a run that panics (under cron.Recover, which
// swallows it) was observed as ran. It is told as failed, never as ran,
// and the panic goes on to the wrappers outside the Locker's.
func TestPanickingRunFailed(t *testing.T) {
	t.Parallel()
	var seen outcomes
	in := newInstance(t, zktest.Path(t), runonce.WithObserver(seen.observe))
	var recovered atomic.Int32
	recoverer := func(j cron.Job) cron.Job {
		return cron.FuncJob(func() {
			defer func() {
				if recover() != nil {
					recovered.Add(1)
				}
			}()
			j.Run()
		})
	}
	cr := cron.New(cron.WithSeconds(), cron.WithChain(recoverer, in.locker.Wrapper()))
	attach(in.locker, cr)
	if _, err := cr.AddJob("* * * * * *", cronlock.Named("report", cron.FuncJob(func() { panic("report failed") }))); err != nil {
		t.Fatal(err)
	}
	startCron(t, cr)
	time.Sleep(2500 * time.Millisecond)
	if got := seen.String(); strings.Contains(got, "ran") || !strings.Contains(got, "failed") || recovered.Load() == 0 {
		t.Errorf("outcomes %q (%d panics recovered outside): want failed, never ran, the panic passed on", got, recovered.Load())
	}
}

// TestOneNameTwoSchedules: one name on two schedules, each wrapped by Wrap
// inside a user's wrapper (the Unwrap form Attach documents, or
// cron.Recover): the older schedule's ticks were dropped before any claim,
// as a removed job's (a Debug line, 0 runs of it). Both are claimed, and
// the shared name is told.
func TestOneNameTwoSchedules(t *testing.T) {
	t.Parallel()
	for _, form := range []string{"Unwrap", "cron.Recover"} {
		t.Run(form, func(t *testing.T) {
			t.Parallel()
			var seen outcomes
			in := newInstance(t, zktest.Path(t), runonce.WithObserver(seen.observe))
			cr := cron.New(cron.WithSeconds())
			attach(in.locker, cr)
			var older, newer atomic.Int32
			wrap := func(j cron.Job) cron.Job {
				if form == "Unwrap" {
					return unwrapper{in.locker.Wrap("report")(j)}
				}
				return cron.NewChain(cron.Recover(cron.DiscardLogger), in.locker.Wrap("report")).Then(j)
			}
			if _, err := cr.AddJob("* * * * * *", wrap(cron.FuncJob(func() { older.Add(1) }))); err != nil {
				t.Fatal(err)
			}
			if _, err := cr.AddJob("*/2 * * * * *", wrap(cron.FuncJob(func() { newer.Add(1) }))); err != nil {
				t.Fatal(err)
			}
			startCron(t, cr)
			time.Sleep(4500 * time.Millisecond)
			if older.Load() == 0 || !strings.Contains(in.logs.String(), "share one name") {
				t.Errorf("the older schedule ran %d times, the newer %d (outcomes %q); want both claimed, the shared name told:\n%s",
					older.Load(), newer.Load(), seen.String(), in.logs.String())
			}
		})
	}
}
