package cronlock_test

import (
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/cronlock"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// TestMain runs the package's tests against one real ZooKeeper, and
// goleak checks that nothing is left running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(zktest.Wrap(m))
}

// instance is one instance of a fleet: a session, its Locker and the logs
// (Info and above) a test reads.
type instance struct {
	locker *cronlock.Locker
	logs   *zktest.SyncBuffer
}

// newInstance returns an instance on a session of its own, closed when
// the test ends.
func newInstance(t *testing.T, root string, opts ...runonce.Option) instance {
	t.Helper()
	var buf zktest.SyncBuffer
	s := zktest.Connect(t, zktest.Servers(t), zklock.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	l, err := cronlock.New(s, root, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return instance{locker: l, logs: &buf}
}

// startCron starts c and stops it when the test ends, waiting for the
// runs going on (robfig/cron runs each on a goroutine of its own).
func startCron(t *testing.T, c *cron.Cron) {
	t.Helper()
	c.Start()
	t.Cleanup(func() { <-c.Stop().Done() })
}

// delay is a cron.JobWrapper that makes its job's timer fire d late: the
// instance's offset from the others (placed before the Locker's wrapper
// in a chain, it delays the Locker's entry, as a later timer would).
func delay(d time.Duration) cron.JobWrapper {
	return func(j cron.Job) cron.Job {
		return cron.FuncJob(func() {
			time.Sleep(d)
			j.Run()
		})
	}
}

// runs counts the runs of each (job, tick), the tick named by robfig/cron's
// scheduled time of the fire (Entry.Prev), not by the run's start, which a
// loaded machine delays past the tick's second; and the ticks an
// instance's observer told lost (held or failed).
type runs struct {
	mu   sync.Mutex
	n    map[string]map[int64]int
	told map[string]map[int64]bool
}

// observe counts e, an observer's event: a run, or a tick told lost.
func (r *runs) observe(e runonce.Event) {
	switch e.Outcome {
	case runonce.Ran:
		r.add(e.Job, e.Tick)
	case runonce.SkippedHeld, runonce.Failed:
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.told == nil {
			r.told = map[string]map[int64]bool{}
		}
		if r.told[e.Job] == nil {
			r.told[e.Job] = map[int64]bool{}
		}
		r.told[e.Job][e.Tick.Unix()] = true
	}
}

func (r *runs) add(job string, at time.Time) {
	tick := at.Unix()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[string]map[int64]int{}
	}
	if r.n[job] == nil {
		r.n[job] = map[int64]int{}
	}
	r.n[job][tick]++
}

// total returns how many runs of job were counted.
func (r *runs) total(job string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, k := range r.n[job] {
		n += k
	}
	return n
}

// check fails t if a tick of a job ran twice, whatever the load, if
// fewer than 2 ticks of a job ran, or if a job missed a tick between its
// first and its last run that no instance's observer told lost (held or
// failed: unknown says the fleet may have run it).
func (r *runs) check(t *testing.T, jobs int) {
	t.Helper()
	faults, notes := r.faults(jobs)
	for _, f := range faults {
		t.Error(f)
	}
	for _, n := range notes {
		t.Log(n)
	}
}

// faults returns what check fails t for, and notes for the log.
func (r *runs) faults(jobs int) (faults, notes []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.n) != jobs {
		faults = append(faults, fmt.Sprintf("%d jobs ran, want %d", len(r.n), jobs))
	}
	for job, ticks := range r.n {
		first, last := int64(1<<62), int64(0)
		for tick, n := range ticks {
			if n != 1 {
				faults = append(faults, fmt.Sprintf("%s: tick %d ran %d times", job, tick, n))
			}
			first, last = min(first, tick), max(last, tick)
		}
		if len(ticks) < 2 {
			faults = append(faults, fmt.Sprintf("%s: %d ticks ran, want at least 2", job, len(ticks)))
		}
		for tick := first; tick <= last; tick++ {
			switch {
			case ticks[tick] > 0:
			case r.told[job][tick]:
				notes = append(notes, fmt.Sprintf("%s: tick %d ran nowhere, told lost (held or failed) by an instance", job, tick))
			default:
				faults = append(faults, fmt.Sprintf("%s: tick %d ran nowhere, and no instance told it lost (held or failed)", job, tick))
			}
		}
	}
	return faults, notes
}
