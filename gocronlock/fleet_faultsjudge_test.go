package gocronlock_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tierlock/tierlock/gocronlock/internal/fleet"
)

// faultsJudge returns what a fleet under faults (TestFleetFaults,
// TestFleetClocks) did wrong, by its runs (rep) and what its instances
// observed (obs): a (job, tick) run twice, whatever the faults; a tick
// that ran nowhere observed by no instance; one observed as already_ran
// or stale (which say the fleet ran it), or told lost (held, failed or lost) by
// no instance, outside a claim a fault cut between its write and its run.
// outside returns the keys no such cut explains (faulted.cutClaims).
// unknown does not tell a loss: it says the fleet may have run the tick,
// and a tick that ran nowhere did not run.
func faultsJudge(rep fleet.Report, obs []fleet.Obs, outside func([]fleet.Key) []fleet.Key) []string {
	var faults []string
	if len(rep.Duplicates) > 0 {
		faults = append(faults, fmt.Sprintf("%d (job, tick) ran more than once: %v", len(rep.Duplicates), rep.Duplicates))
	}
	lost := fleet.TellsLost(rep, obs)
	if len(lost.Unobserved) > 0 {
		faults = append(faults, fmt.Sprintf("%d ticks ran nowhere, observed by no instance: %v", len(lost.Unobserved), lost.Unobserved))
	}
	for _, c := range []struct {
		what string
		keys []fleet.Key
	}{
		{"observed as already_ran", lost.AlreadyRan},
		{"observed as stale", lost.Stale},
		{"told lost (held, failed or lost) by no instance", fleet.Untold(rep, obs)},
	} {
		if out := outside(c.keys); len(out) > 0 {
			faults = append(faults, fmt.Sprintf("%d ticks ran nowhere, %s, outside a claim a fault cut: %v", len(out), c.what, out))
		}
	}
	return faults
}

// TestFaultsJudgeRefuses seeds the judge of the fleets under faults and
// with clocks apart: a (job, tick) run twice, a tick that ran nowhere told
// only unknown (it passed before: those judges asked only that an
// instance observed it), and one told by none fail it; one told held, and
// one observed as already_ran in a tick a fault cut, pass.
func TestFaultsJudgeRefuses(t *testing.T) {
	var runs []fleet.Run
	for tick := int64(2); tick <= 5; tick++ {
		if tick != 4 { // tick 4 ran nowhere
			runs = append(runs, fleet.Run{Job: "job-00", Tick: tick, Node: "node-0"})
		}
	}
	double := append(slices.Clone(runs), fleet.Run{Job: "job-00", Tick: 3, Node: "node-1"})
	cutAt := func(c int64) func([]fleet.Key) []fleet.Key {
		return func(ks []fleet.Key) []fleet.Key {
			return slices.DeleteFunc(slices.Clone(ks), func(k fleet.Key) bool { return k.Tick == c })
		}
	}
	said := func(outcome string) []fleet.Obs {
		return []fleet.Obs{{Job: "job-00", Node: "node-1", Outcome: outcome, Tick: 4}}
	}
	for _, tc := range []struct {
		name   string
		runs   []fleet.Run
		obs    []fleet.Obs
		cut    int64
		refuse string
	}{
		{"a double", double, said("held"), 0, "ran more than once"},
		{"a tick lost, told unknown", runs, said("unknown"), 0, "told lost (held, failed or lost) by no instance"},
		{"a tick lost, told by none", runs, nil, 0, "observed by no instance"},
		{"a tick lost, told stale", runs, said("stale"), 0, "observed as stale"},
		{"a tick lost, told held", runs, said("held"), 0, ""},
		{"a tick lost, told lost", runs, said("lost"), 0, ""},
		{"a claim a kill cut, already_ran", runs, said("already_ran"), 4, ""},
		{"already_ran outside a cut", runs, said("already_ran"), 2, "observed as already_ran"},
	} {
		rep := fleet.Check(tc.runs, 1, 2, 5, nil)
		got := strings.Join(faultsJudge(rep, tc.obs, cutAt(tc.cut)), "; ")
		if (tc.refuse == "") != (got == "") || !strings.Contains(got, tc.refuse) {
			t.Errorf("%s: faults %q, want %q", tc.name, got, tc.refuse)
		}
	}
}
