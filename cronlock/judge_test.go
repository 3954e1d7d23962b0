package cronlock_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/runonce"
)

// TestRunsJudgeRefuses seeds TestWrapperOncePerTick's judge (runs.check):
// a tick run twice fails it; a tick between a job's runs that ran
// nowhere fails it when no instance told it lost, or told it only
// unknown (it passed before once any instance said "overloaded"), and
// passes when one told it held or failed.
func TestRunsJudgeRefuses(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 1, 0, time.UTC)
	ev := func(job string, s int, o runonce.Outcome) runonce.Event {
		return runonce.Event{Job: job, Tick: t0.Add(time.Duration(s) * time.Second), Outcome: o}
	}
	for _, tc := range []struct {
		name   string
		events []runonce.Event
		refuse string
	}{
		{"every tick once", []runonce.Event{ev("a", 0, runonce.Ran), ev("a", 1, runonce.Ran), ev("a", 2, runonce.Ran)}, ""},
		{"a tick run twice", []runonce.Event{ev("a", 0, runonce.Ran), ev("a", 1, runonce.Ran), ev("a", 1, runonce.Ran)}, "ran 2 times"},
		{"a tick lost, told by none", []runonce.Event{ev("a", 0, runonce.Ran), ev("a", 2, runonce.Ran)}, "no instance told it lost"},
		{"a tick lost, told unknown", []runonce.Event{ev("a", 0, runonce.Ran), ev("a", 1, runonce.SkippedUnknown), ev("a", 2, runonce.Ran)}, "no instance told it lost"},
		{"a tick lost, told held", []runonce.Event{ev("a", 0, runonce.Ran), ev("a", 1, runonce.SkippedHeld), ev("a", 2, runonce.Ran)}, ""},
		{"a tick lost, told failed", []runonce.Event{ev("a", 0, runonce.Ran), ev("a", 1, runonce.Failed), ev("a", 2, runonce.Ran)}, ""},
	} {
		var r runs
		for _, e := range tc.events {
			r.observe(e)
		}
		faults, _ := r.faults(1)
		got := strings.Join(faults, "; ")
		if (tc.refuse == "") != (got == "") || !strings.Contains(got, tc.refuse) {
			t.Errorf("%s: faults %q, want %q", tc.name, got, tc.refuse)
		}
	}
}
