package gocronlock_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tierlock/tierlock/gocronlock/internal/fleet"
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
			f := startFleet(t, fleet.ModeLocker, d, "-spread")
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
			if after.Coverage() < 0.999 {
				t.Errorf("%.2f%% of the ticks from the second after the kill ran, want at least 99.9%%", 100*after.Coverage())
			}
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
