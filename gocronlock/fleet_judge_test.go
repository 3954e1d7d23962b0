package gocronlock_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/gocronlock/internal/fleet"
)

// TestFleetJudgesRefuse seeds the fleets' judges with what they must
// refuse: a (job, tick) run twice, its timers a second apart (gocron fired
// one late: TestFleetScale only logged it) or 100 ms apart, and a tick
// that ran nowhere, told by no instance or only as unknown (checkCoverage
// let any shortfall pass once an instance said "overloaded"). A tick told
// held passes.
func TestFleetJudgesRefuse(t *testing.T) {
	t0 := time.Now()
	runs := func(lost bool, extra ...fleet.Run) []fleet.Run {
		var rs []fleet.Run
		for tick := int64(2); tick <= 5; tick++ {
			if tick == 4 && lost {
				continue // a tick that ran nowhere
			}
			rs = append(rs, fleet.Run{Job: "job-00", Tick: tick, Node: "node-0", At: t0.Add(time.Duration(tick) * time.Second)})
		}
		return append(rs, extra...)
	}
	judge := func(rs []fleet.Run, obs []fleet.Obs) []string {
		sc := scaled{rep: fleet.Check(rs, 1, 2, 5, nil), obs: obs, warnings: `1 × "WARN overloaded"`}
		sc.late, sc.twice = doubleRuns(rs, sc.rep.Duplicates)
		return sc.faults(0.999)
	}
	late := fleet.Run{Job: "job-00", Tick: 3, Node: "node-1", At: t0.Add(4 * time.Second)}
	close := fleet.Run{Job: "job-00", Tick: 3, Node: "node-2", At: t0.Add(3*time.Second + 100*time.Millisecond)}
	for _, tc := range []struct {
		name   string
		runs   []fleet.Run
		obs    []fleet.Obs
		refuse string // a word of the fault, "" for none
	}{
		{"a double, a timer fired 1 s late", runs(false, late), nil, "a window or more apart"},
		{"a double, timers 100 ms apart", runs(false, close), nil, "less than a window apart"},
		{"a tick lost, told by no instance", runs(true), nil, "told lost (held, failed or lost) by no instance"},
		{"a tick lost, told unknown", runs(true), []fleet.Obs{{Job: "job-00", Node: "node-1", Outcome: "unknown", Tick: 4}}, "by no instance"},
		{"a tick lost, told held", runs(true), []fleet.Obs{{Job: "job-00", Node: "node-1", Outcome: "held", Tick: 4}}, ""},
		{"a tick lost, told lost (gocron did not fire it)", runs(true), []fleet.Obs{{Job: "job-00", Node: "node-1", Outcome: "lost", Tick: 4}}, ""},
		{"every tick once", runs(false), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			faults := strings.Join(judge(tc.runs, tc.obs), "; ")
			switch {
			case tc.refuse == "" && faults != "":
				t.Errorf("refused: %s", faults)
			case tc.refuse != "" && !strings.Contains(faults, tc.refuse):
				t.Errorf("faults %q, want one saying %q", faults, tc.refuse)
			}
			// The judges that read rep.Duplicates alone (TestFleetLocker's, the
			// spread's, the elector's, the minute's): a double is one there.
			rep := fleet.Check(tc.runs, 1, 2, 5, nil)
			if double := strings.Contains(tc.name, "double"); double != (len(rep.Duplicates) > 0) {
				t.Errorf("fleet.Check's duplicates %v, want a double: %v", rep.Duplicates, double)
			}
		})
	}
}
