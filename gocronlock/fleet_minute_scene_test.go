package gocronlock_test

import (
	"flag"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tierlock/tierlock/gocronlock/internal/fleet"
	"github.com/tierlock/tierlock/internal/zktest"
)

var fleetMinute = flag.Duration("fleet.minute", 0, "TestFleetMinuteTicks: how long the two fleets schedule (0: skip; 12m gives each minute job 10 counted ticks)")

// TestFleetMinuteTicks runs two Locker fleets side by side on one
// ZooKeeper, each of three gocron processes: one whose ten jobs run once a
// minute, one whose ten run every second. The minute fleet's sessions are
// idle between ticks; the lease proves itself meanwhile (renew.go's idle
// syncs), so that a tick's Lock is granted on its create's answer, as an
// every-second tick's is. It compares the two fleets' fire-to-run delays
// (from the tick's time on the instance's timer to the job's start, median
// and p99) and fails past 1.5x. A measurement, not a CI test: it runs only
// with -fleet.minute, the figures in docs/cron.md are
//
//	go test . -count=1 -v -run TestFleetMinuteTicks -fleet.minute=12m
func TestFleetMinuteTicks(t *testing.T) {
	d := *fleetMinute
	if d == 0 {
		t.Skip("a measurement of several minutes: -fleet.minute 12m")
	}
	const jobs = 10
	servers := zktest.Servers(t)
	minute := startFleetOn(t, servers, fleet.ModeLocker, d, jobs, "-period", time.Minute.String())
	second := startFleetOn(t, servers, fleet.ModeLocker, d, jobs)
	var waits [2][]time.Duration
	for i, f := range []*fleetRun{minute, second} {
		period := []time.Duration{time.Minute, time.Second}[i]
		rs := f.wait(t, time.Until(f.start)+d+time.Minute, nil)
		last := int64(d/period) - 1
		rep := fleet.Check(rs.Runs, jobs, 1, last-1, nil)
		t.Logf("every %v, %v, 3 processes, %d jobs: %v", period, d, jobs, rep)
		for _, st := range rs.Lags {
			t.Logf("every %v: %s called Lock after its tick: %d, p50 %v, p99 %v, max %v", period, st.Node, st.N, st.P50, st.P99, st.Max)
		}
		for _, st := range rs.Locks {
			t.Logf("every %v: %s's Lock took: %d, p50 %v, p99 %v, max %v", period, st.Node, st.N, st.P50, st.P99, st.Max)
		}
		t.Logf("every %v: outcomes %v", period, rs.Outcomes)
		if len(rep.Duplicates) > 0 {
			t.Errorf("every %v: %d (job, tick) ran more than once", period, len(rep.Duplicates))
		}
		offset := map[string]time.Duration{}
		for k, off := range fleetOffsets {
			offset[fmt.Sprintf("node-%d", k)] = off
		}
		for _, r := range rs.Runs {
			if r.Tick < 1 || r.Tick > last-1 {
				continue
			}
			fired := f.start.Add(offset[r.Node] + time.Duration(r.Tick)*period)
			waits[i] = append(waits[i], r.At.Sub(fired))
		}
	}
	q := func(ds []time.Duration, p float64) time.Duration {
		if len(ds) == 0 {
			return 0
		}
		slices.Sort(ds)
		return ds[min(len(ds)-1, int(p*float64(len(ds))))]
	}
	for _, p := range []float64{0.5, 0.99} {
		m, s := q(waits[0], p), q(waits[1], p)
		t.Logf("tick to run p%v: once a minute %v (%d runs), every second %v (%d runs): %.2fx", p*100, m, len(waits[0]), s, len(waits[1]), float64(m)/float64(max(s, 1)))
		if float64(m) > 1.5*float64(s) {
			t.Errorf("tick to run p%v: once a minute %v, more than 1.5x every second's %v", p*100, m, s)
		}
	}
}
