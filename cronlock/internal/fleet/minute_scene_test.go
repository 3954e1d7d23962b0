package fleet

import (
	"flag"
	"fmt"
	"testing"
	"time"
)

var fleetMinute = flag.Duration("fleet.minute", 0, "TestFleetMinuteTicks: how long the two fleets schedule (0: skip; 12m gives each minute job 10 counted ticks)")

// TestFleetMinuteTicks runs two tierlock fleets side by side on one
// ZooKeeper, each of three processes: one whose ten jobs fire once a
// minute, all at second 0, and one whose ten fire every second. A session
// that locks once a minute is idle between its ticks; the lease keeps
// itself proved meanwhile (renew.go's idle syncs), so that its tick's lock
// is granted on its create's answer, as an every-second job's is. The
// test compares the two fleets' fire-to-run delays (median and p99) and
// fails past 1.5x. A measurement, not a CI test: it runs only with
// -fleet.minute, the figures in docs/cron.md are
//
//	go test ./internal/fleet/ -count=1 -v -run TestFleetMinuteTicks -fleet.minute=12m
func TestFleetMinuteTicks(t *testing.T) {
	d := *fleetMinute
	if d == 0 {
		t.Skip("a measurement of several minutes: -fleet.minute 12m")
	}
	v, _ := Lookup("tierlock")
	servers := backend(t, v.Backend)
	jobs := func(prefix, spec string) []Job {
		var js []Job
		for i := range jobsPerSpec {
			js = append(js, Job{Name: fmt.Sprintf("%s-%02d", prefix, i), Spec: spec})
		}
		return js
	}
	minute := startFleet(t, "tierlock", servers, d, jobs("minute", "0 * * * * *"))
	second := startFleet(t, "tierlock", servers, d, jobs("second", "@every 1s"))
	var reps [2]Report
	for i, f := range []*fleetRun{minute, second} {
		rs := f.wait(t, fleetLead+d+time.Minute)
		rep, err := Check(f.jobs, rs, f.start, f.start.Add(d))
		if err != nil {
			t.Fatal(err)
		}
		judge(t, OncePerTick, rep, f.said(rs, rep))
		reps[i] = rep
	}
	t.Logf("once a minute, %v, 3 processes, %d jobs: %v", d, jobsPerSpec, reps[0])
	t.Logf("every second, %v, 3 processes, %d jobs: %v", d, jobsPerSpec, reps[1])
	for q, name := range []string{"p50", "p99"} {
		m, s := reps[0].Wait[q], reps[1].Wait[q]
		t.Logf("fire to run %s: once a minute %v, every second %v: %.2fx", name, m, s, float64(m)/float64(max(s, 1)))
		if float64(m) > 1.5*float64(s) {
			t.Errorf("fire to run %s: once a minute %v, more than 1.5x every second's %v", name, m, s)
		}
	}
}
