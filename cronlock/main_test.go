package cronlock_test

import (
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
// loaded machine delays past the tick's second.
type runs struct {
	mu sync.Mutex
	n  map[string]map[int64]int
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

// check fails t if a tick of a job ran twice, or if a job missed a tick
// between its first and its last run.
func (r *runs) check(t *testing.T, jobs int) { r.checkTold(t, jobs, "") }

// checkTold is check, but a tick that ran nowhere is allowed when told
// names what the instances said of it (the Locker's "overloaded" or
// "ZooKeeper unreachable": ticks are lost or run twice); a tick run twice
// never is.
func (r *runs) checkTold(t *testing.T, jobs int, told string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.n) != jobs {
		t.Errorf("%d jobs ran, want %d", len(r.n), jobs)
	}
	for job, ticks := range r.n {
		first, last := int64(1<<62), int64(0)
		for tick, n := range ticks {
			if n != 1 {
				t.Errorf("%s: tick %d ran %d times", job, tick, n)
			}
			first, last = min(first, tick), max(last, tick)
		}
		switch got := int64(len(ticks)); {
		case got < 2:
			t.Errorf("%s: %d ticks ran, want at least 2", job, got)
		case got != last-first+1 && told != "":
			t.Logf("%s: %d ticks ran from %d to %d: the others lost, as the instances said (%s)", job, got, first, last, told)
		case got != last-first+1:
			t.Errorf("%s: %d ticks ran from %d to %d, want every tick", job, got, first, last)
		}
	}
}
