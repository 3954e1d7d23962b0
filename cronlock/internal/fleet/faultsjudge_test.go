package fleet

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// faultsJudge returns what a fleet under faults (TestFleetFaults,
// TestFleetClocks) did wrong, by its report and what its instances
// observed (obs): a tick run twice, whatever the faults; a tick that ran
// nowhere observed by no instance; one observed as already_ran or stale
// (which say the fleet ran it), or told lost (held or failed) by no
// instance, outside a claim a fault cut between its write and its run.
// outside returns the keys no such cut explains (fleetRun.outsideCuts).
// unknown does not tell a loss: it says the fleet may have run the tick,
// and a tick that ran nowhere did not run.
func faultsJudge(rep Report, obs []Obs, outside func([]Key) []Key) []string {
	var faults []string
	if rep.Repeated() > 0 {
		faults = append(faults, fmt.Sprintf("%d ticks ran more than once: %v", rep.Repeated(), rep.Repeats))
	}
	lost := TellsLost(rep, obs)
	if len(lost.Unobserved) > 0 {
		faults = append(faults, fmt.Sprintf("%d ticks ran nowhere, observed by no instance: %v", len(lost.Unobserved), lost.Unobserved))
	}
	for _, c := range []struct {
		what string
		keys []Key
	}{
		{"observed as already_ran", lost.AlreadyRan},
		{"observed as stale", lost.Stale},
		{"told lost (held or failed) by no instance", lost.Untold},
	} {
		if out := outside(c.keys); len(out) > 0 {
			faults = append(faults, fmt.Sprintf("%d ticks ran nowhere, %s, outside a claim a fault cut: %v", len(out), c.what, out))
		}
	}
	return faults
}

// TestFaultsJudgeRefuses seeds the judge of the fleets under faults and
// with clocks apart: a tick run twice, a tick that ran nowhere told only
// unknown (it passed before: those judges asked only that an instance
// observed it), and one told by none fail it; one told held, and one
// observed as already_ran in a tick a fault cut, pass.
func TestFaultsJudgeRefuses(t *testing.T) {
	tick := func(s int) time.Time { return time.Date(2026, 11, 29, 0, 0, s, 0, time.UTC) }
	k := Key{Job: "job-00", Tick: tick(4)}
	lostRep := Report{Counts: Counts{Ticks: 4, Once: 3, Missed: 1}, Lost: []Key{k}}
	double := Report{Counts: Counts{Ticks: 4, Once: 3, Twice: 1}, Repeats: []Key{{Job: "job-00", Tick: tick(3)}}}
	cutAt := func(c time.Time) func([]Key) []Key {
		return func(ks []Key) []Key {
			return slices.DeleteFunc(slices.Clone(ks), func(k Key) bool { return k.Tick.Equal(c) })
		}
	}
	said := func(outcome string) []Obs {
		return []Obs{{Job: k.Job, Tick: k.Tick, Instance: "node-1", Outcome: outcome}}
	}
	for _, tc := range []struct {
		name   string
		rep    Report
		obs    []Obs
		cut    time.Time
		refuse string
	}{
		{"a double", double, nil, time.Time{}, "ran more than once"},
		{"a tick lost, told unknown", lostRep, said("unknown"), time.Time{}, "told lost (held or failed) by no instance"},
		{"a tick lost, told by none", lostRep, nil, time.Time{}, "observed by no instance"},
		{"a tick lost, told stale", lostRep, said("stale"), time.Time{}, "observed as stale"},
		{"a tick lost, told held", lostRep, said("held"), time.Time{}, ""},
		{"a claim a kill cut, already_ran", lostRep, said("already_ran"), tick(4), ""},
		{"already_ran outside a cut", lostRep, said("already_ran"), tick(2), "observed as already_ran"},
	} {
		got := strings.Join(faultsJudge(tc.rep, tc.obs, cutAt(tc.cut)), "; ")
		if (tc.refuse == "") != (got == "") || !strings.Contains(got, tc.refuse) {
			t.Errorf("%s: faults %q, want %q", tc.name, got, tc.refuse)
		}
	}
}
