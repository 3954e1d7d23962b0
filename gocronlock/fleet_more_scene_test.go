package gocronlock_test

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/gocronlock/internal/fleet"
	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

var zkSh = flag.Bool("fleet.zksh", false, "run TestFleetElectorZkSh: failovers on a server of scripts/zk.sh's tickTime (about 1 min)")

// TestFleetSpread (issue 39, item 6): with WithSpread the fleet's runs
// spread over its instances, still once per tick, and at least 99 % of the
// ticks run or each tick that ran nowhere was told lost by an instance
// (checkCoverage). Each
// instance makes from an eighth to half of the runs: in the timers' order
// the 8 ticks counted go 3, 3 and 2 (25 %, which was the floor: loaded run
// 37 failed at 22.6 %), and a loaded machine's other orders move a tick or
// two (runrec.TestSpreadSharesOverArrivalOrders); without spreading, the
// first timer's instance makes them all.
func TestFleetSpread(t *testing.T) {
	if testing.Short() {
		t.Skip("fleet test: -short")
	}
	sideBySide(t)
	d := *fleetDuration
	f := startFleet(t, fleet.ModeLocker, d, "-spread", "-obs")
	rs := f.wait(t, time.Until(f.start)+d+40*time.Second, nil)
	rep := fleet.Check(rs.Runs, fleetJobs, 1, lastTick(d)-1, nil)
	t.Logf("spread fleet, %v: %v; outcomes: %s; the Locker's warnings: %s", d, rep, strings.Join(rs.Outcomes, "; "), f.warnings())
	if len(rep.Duplicates) > 0 {
		t.Errorf("%d (job, tick) ran more than once: %v", len(rep.Duplicates), rep.Duplicates)
	}
	checkCoverage(t, rep, rs.Obs, 0.99, f.warnings())
	for _, in := range f.instances {
		if share := float64(rep.PerNode[in.name]) / float64(rep.Runs); share < 0.125 || share > 0.5 {
			t.Errorf("%s made %.1f%% of the runs, want 12.5-50%%", in.name, 100*share)
		}
	}
}

// TestFleetElectorBreak (issue 37, item 3): an operator deletes the
// leader's election node (tierlock break) 300 ms before a tick, and the
// next leader's 100 ms before it, all instances on one server: a
// leadership 200 ms old, younger than the quarter of the session timeout
// after which a hold used to watch its own node. Each old leader stops
// before the next leads, so no tick runs twice, and the hand-overs cost
// no tick.
func TestFleetElectorBreak(t *testing.T) {
	if testing.Short() {
		t.Skip("fleet test: -short")
	}
	sideBySide(t)
	d := *fleetDuration
	f := startFleet(t, fleet.ModeElector, d)
	ctx := zktest.Context(t, d+time.Minute)
	operator := zktest.Connect(t, zktest.Servers(t))
	tick := f.start.Add(d / fleetPeriod / 3 * fleetPeriod)
	for _, before := range []time.Duration{300 * time.Millisecond, 100 * time.Millisecond} {
		time.Sleep(time.Until(tick.Add(-before)))
		ps, err := zklock.ListParticipants(ctx, operator, f.root)
		if err != nil || len(ps) < 2 {
			t.Fatalf("candidates %v, %v", ps, err)
		}
		if err := operator.Conn().Delete(f.root+"/"+ps[0].Node, -1); err != nil {
			t.Fatal(err)
		}
	}
	rs := f.wait(t, time.Until(f.start)+d+40*time.Second, nil)
	rep := fleet.Check(rs.Runs, fleetJobs, 1, lastTick(d)-1, nil)
	var changes []string
	for _, l := range rs.Leaders {
		changes = append(changes, fmt.Sprintf("%s %t at +%v", l.Node, l.Leading, l.At.Sub(f.start).Round(time.Millisecond)))
	}
	t.Logf("elector fleet, %v, leaders' nodes deleted 300 and 100 ms before +%v: %v; leadership: %s",
		d, tick.Sub(f.start), rep, strings.Join(changes, ", "))
	if len(rep.Duplicates) > 0 {
		t.Errorf("%d (job, tick) ran more than once: %v", len(rep.Duplicates), rep.Duplicates)
	}
	if rep.Coverage() < 0.99 {
		t.Errorf("%.2f%% of the ticks ran, want at least 99%%", 100*rep.Coverage())
	}
}

// TestFleetElectorZkSh (issue 39, item 5) measures the failover users get
// on the server README tells them to start (scripts/zk.sh: tickTime 2000,
// so no session under 4 s): the elector fleet's leader SIGKILLed, with a
// 2 s session asked (4 s granted) and with the default 10 s. Only with
// -fleet.zksh.
func TestFleetElectorZkSh(t *testing.T) {
	if !*zkSh {
		t.Skip("a measurement: -fleet.zksh")
	}
	zc := zktest.Ensemble(t, 1, zkserver.WithTickTime(2*time.Second))
	for _, asked := range []time.Duration{2 * time.Second, 10 * time.Second} {
		t.Run(asked.String(), func(t *testing.T) {
			const d = 36 * time.Second
			f := startFleetOn(t, zc.Addrs(), fleet.ModeElector, d, fleetJobs, "-session-timeout", asked.String())
			time.Sleep(time.Until(f.start.Add(d / 3)))
			victim := f.leader()
			if victim == nil {
				t.Fatal("no leader a third into the run")
			}
			killed := time.Now()
			victim.proc.Kill()
			var next string
			var led time.Time
			zktest.Eventually(t, 25*time.Second, "a new leader", func() bool {
				f.mu.Lock()
				defer f.mu.Unlock()
				for _, l := range f.records.Leaders {
					if l.Leading && l.Node != victim.name && l.At.After(killed) {
						next, led = l.Node, l.At
						return true
					}
				}
				return false
			})
			rs := f.wait(t, time.Until(f.start)+d+40*time.Second, map[*instance]bool{victim: true})
			rep := fleet.Check(rs.Runs, fleetJobs, 1, lastTick(d)-1, func(tick int64) bool {
				return tick >= int64(killed.Sub(f.start)/fleetPeriod) && tick <= int64(led.Sub(f.start)/fleetPeriod)+1
			})
			t.Logf("tickTime 2000, session asked %v: %s killed, %s led %v later; outside the failover: %v",
				asked, victim.name, next, led.Sub(killed).Round(10*time.Millisecond), rep)
			if len(rep.Duplicates) > 0 {
				t.Errorf("%d (job, tick) ran more than once", len(rep.Duplicates))
			}
		})
	}
}

// TestFleetOutsideEnvelope (issue 39, item 2): a fleet outside what the
// rule needs hears of it from the Locker within a few ticks: duration
// jobs without a start time on replicas started 300 ms apart (their
// phases 0, 300 and 600 ms: ticks run more than once), and a replica
// whose window differs (1,500 ms against 500).
func TestFleetOutsideEnvelope(t *testing.T) {
	if testing.Short() {
		t.Skip("fleet test: -short")
	}
	sideBySide(t)
	for _, c := range []struct {
		name    string
		offsets []time.Duration
		own     perInstance
		want    string
	}{
		{"no start time", []time.Duration{0, 300 * time.Millisecond, 600 * time.Millisecond},
			func(int) (string, []string) { return "", []string{"-no-start"} }, "the job runs more than once per tick"},
		{"windows differ", fleetOffsets, func(i int) (string, []string) {
			if i == 0 {
				return "", []string{"-window", "1500ms"}
			}
			return "", nil
		}, "the fleet's windows differ"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sideBySide(t)
			const d = 8 * time.Second
			f := startFleetAt(t, zktest.Servers(t), c.offsets, c.own, fleet.ModeLocker, d, fleetJobs)
			var heard time.Time
			zktest.Eventually(t, time.Until(f.start)+d, "the Locker's warning: "+c.want, func() bool {
				for _, in := range f.instances {
					if strings.Contains(in.logs.String(), c.want) {
						heard = time.Now()
						return true
					}
				}
				return false
			})
			t.Logf("%s: warned %v after the first tick", c.name, heard.Sub(f.start).Round(100*time.Millisecond))
			if heard.Sub(f.start) > 5*fleetPeriod {
				t.Errorf("warned %v after the first tick, want within 5 ticks", heard.Sub(f.start))
			}
			f.wait(t, time.Until(f.start)+d+40*time.Second, nil)
		})
	}
}
