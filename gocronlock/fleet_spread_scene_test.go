package gocronlock_test

import (
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/tierlock/tierlock/gocronlock/internal/fleet"
	"github.com/tierlock/tierlock/internal/zktest"
)

// TestFleetSpreadLeave (issue 43, item 2): the spread fleet of
// TestFleetSpread, one of whose instances (node-1, 150 ms) is SIGKILLed a
// third of the way in, after its attempt of that tick; in "comes back" it
// starts again under its name at half-time. A job whose last tick was left
// to it loses that tick, and that one only: every tick from the second
// after the kill runs (at least 99.9 %), none twice. Before, the instance
// that made the last run stepped back on every later tick for the one
// that left, and the jobs stopped.
func TestFleetSpreadLeave(t *testing.T) {
	if testing.Short() {
		t.Skip("fleet test: -short")
	}
	sideBySide(t)
	for _, back := range []bool{false, true} {
		name := map[bool]string{false: "leaves for good", true: "comes back"}[back]
		t.Run(name, func(t *testing.T) {
			sideBySide(t)
			d := *fleetDuration
			f := startFleet(t, fleet.ModeLocker, d, "-spread", "-obs")
			victim := f.instances[1]
			kill := f.start.Add(d/3/fleetPeriod*fleetPeriod + fleetOffsets[1] + 100*time.Millisecond)
			time.Sleep(time.Until(kill))
			victim.proc.Kill()
			killTick := int64(kill.Sub(f.start) / fleetPeriod)
			var again *instance
			if back {
				time.Sleep(time.Until(f.start.Add(d / 2)))
				again = f.rejoin(t, victim)
			}
			rs := f.wait(t, time.Until(f.start)+d+40*time.Second, map[*instance]bool{victim: true})
			// The ticks of the kill: its own and the next (the one left to
			// the instance killed after its attempt of its own).
			around := fleet.Check(rs.Runs, fleetJobs, killTick, killTick+1, nil)
			after := fleet.Check(rs.Runs, fleetJobs, killTick+2, lastTick(d)-1, nil)
			all := fleet.Check(rs.Runs, fleetJobs, 1, lastTick(d)-1, nil)
			t.Logf("spread fleet, %v, %s killed at tick %d%s: ticks %d-%d: %v; from tick %d on: %v",
				d, victim.name, killTick, rejoined(again, f), killTick, killTick+1, around, killTick+2, after)
			if len(all.Duplicates) > 0 {
				t.Errorf("%d (job, tick) ran more than once: %v", len(all.Duplicates), all.Duplicates)
			}
			// From the second after the kill: a job whose lock the killed
			// instance held keeps it until that session expires, which a
			// loaded server can date a tick late (loaded make test run 109:
			// 4 of 80 ticks, each told "tick lost"). Such losses are
			// allowed when each is observed as lost (held) by an
			// instance, as is any other loss (checkCoverage).
			checkCoverage(t, after, rs.Obs, 0.999, f.warnings())
			if lost := around.Expected - around.Covered; lost > fleetJobs {
				t.Errorf("%d (job, tick) lost in the ticks of the kill, want at most one per job", lost)
			}
		})
	}
}

// rejoined says when the instance that came back made its first run.
func rejoined(again *instance, f *fleetRun) string {
	if again == nil {
		return ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	first := int64(-1)
	for _, r := range f.records.Runs {
		if r.Node == again.name && r.At.After(f.start.Add(*fleetDuration/2)) && (first < 0 || r.Tick < first) {
			first = r.Tick
		}
	}
	return fmt.Sprintf(", back at half-time (its first run: tick %d)", first)
}

// oldBinary is a test binary of an earlier version of this module, for
// TestFleetMixed.
var oldBinary = flag.String("fleet.old", "", "TestFleetMixed: a test binary of an earlier version of this module (go test -c in a checkout of it)")

// TestFleetMixed (issue 45: a fleet upgraded one instance at a time): the
// fleet of TestFleetLocker and of TestFleetSpread with its first and last
// instances of an earlier version (-fleet.old), the middle one of this
// one: each tick runs once, none twice, and with spreading each instance
// makes runs. (A fleet left with instances of a version before issue 43
// alone keeps its defect: one that leaves stops their jobs.) Only with
// -fleet.old:
//
//	git worktree add /somewhere/old <commit> && (cd /somewhere/old/gocronlock && go test -c -o old.test .)
//	go test -count=1 -v -run TestFleetMixed -fleet.old /somewhere/old/gocronlock/old.test .
func TestFleetMixed(t *testing.T) {
	if *oldBinary == "" {
		t.Skip("a compatibility check: -fleet.old")
	}
	for _, spread := range []bool{false, true} {
		t.Run(map[bool]string{false: "locker", true: "spread"}[spread], func(t *testing.T) {
			d := *fleetDuration
			var extra []string
			if spread {
				extra = []string{"-spread"}
			}
			f := startFleetAt(t, zktest.Servers(t), fleetOffsets, func(i int) (string, []string) {
				if i == 1 {
					return "", nil
				}
				return *oldBinary, nil
			}, fleet.ModeLocker, d, fleetJobs, extra...)
			rs := f.wait(t, time.Until(f.start)+d+40*time.Second, nil)
			rep := fleet.Check(rs.Runs, fleetJobs, 1, lastTick(d)-1, nil)
			t.Logf("mixed fleet (node-0 and node-2 of %s, node-1 of this version), spread %t, %v: %v", *oldBinary, spread, d, rep)
			if len(rep.Duplicates) > 0 {
				t.Errorf("%d (job, tick) ran more than once: %v", len(rep.Duplicates), rep.Duplicates)
			}
			if rep.Coverage() < 0.999 {
				t.Errorf("%.2f%% of the ticks ran, want at least 99.9%%", 100*rep.Coverage())
			}
			for _, in := range f.instances {
				if spread && rep.PerNode[in.name] == 0 {
					t.Errorf("%s made no run: the runs did not spread", in.name)
				}
			}
		})
	}
}
