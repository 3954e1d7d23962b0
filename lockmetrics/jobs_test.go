package lockmetrics_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierlock/tierlock/lockmetrics"
	"github.com/tierlock/tierlock/runonce"
)

// TestJobMetrics (issue 39, item 4): a scheduled job's Lock calls, as
// gocronlock.WithObserver reports them, become runs and skips by reason,
// and Lock's latency; job names past WithMaxLocks count as "other", and an
// unknown outcome as failed.
func TestJobMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := lockmetrics.New(reg, lockmetrics.WithMaxLocks(2))
	if err != nil {
		t.Fatal(err)
	}
	e := serve(t, reg)
	for _, o := range []string{"ran", "already_ran", "already_ran", "held", "yielded", "stale", "unknown", "failed", "bogus"} {
		m.ObserveJob("report", o, 3*time.Millisecond)
	}
	for i := range 3 {
		m.ObserveJob(fmt.Sprint("job-", i), "ran", time.Millisecond)
	}
	var nilC *lockmetrics.Collector
	nilC.ObserveJob("x", "ran", 0) // a nil Collector does nothing
	e.expect(map[string]float64{
		"tierlock_job_locks_total{job=report,outcome=ran}":         1,
		"tierlock_job_locks_total{job=report,outcome=already_ran}": 2,
		"tierlock_job_locks_total{job=report,outcome=held}":        1,
		"tierlock_job_locks_total{job=report,outcome=yielded}":     1,
		"tierlock_job_locks_total{job=report,outcome=stale}":       1,
		"tierlock_job_locks_total{job=report,outcome=unknown}":     1,
		"tierlock_job_locks_total{job=report,outcome=failed}":      2,
		"tierlock_job_locks_total{job=job-0,outcome=ran}":          1,
		"tierlock_job_locks_total{job=other,outcome=ran}":          2,
		"tierlock_job_lock_seconds{outcome=ran}":                   4,
		"tierlock_job_lock_seconds{outcome=failed}":                2,
	})
}

// Every outcome runonce reports has a series of its own: the metrics speak
// the Runner's vocabulary. Before "stale" was added here, runonce's stale
// ticks were counted as failed; so were "lost" ticks (runonce.Lost, a tick
// the scheduler did not fire that no instance ran) before it was, and the
// loop stopped at "unknown", short of the outcomes after it.
func TestJobOutcomesAreRunoncesOutcomes(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := lockmetrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	e := serve(t, reg)
	want := map[string]float64{}
	for o := runonce.Outcome(0); !strings.HasPrefix(o.String(), "Outcome("); o++ {
		m.ObserveJob("job", o.String(), time.Millisecond)
		want["tierlock_job_locks_total{job=job,outcome="+o.String()+"}"] = 1
	}
	e.expect(want)
}
