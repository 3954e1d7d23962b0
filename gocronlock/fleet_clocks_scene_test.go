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
)

// The fleet on one clock, in any configuration (issue 56): a documented
// run, not make test's.
//
//	cd gocronlock && go test -count=1 -timeout 30m -v -run TestFleetClocks . -fleet.clocks all -fleet.duration 80s
var fleetClocks = flag.String("fleet.clocks", "", "TestFleetClocks: the configurations, comma-separated ("+strings.Join(clockNames, ", ")+") or all")

// clockConfig is one configuration of TestFleetClocks: ZooKeeper's clock
// off the hosts' (libfaketime), each instance's flags of its own, the
// instance the faults hit.
type clockConfig struct {
	zk     time.Duration
	own    map[int][]string
	target string
	clock  time.Duration // the target's -clock
	what   string
}

// clockNames are the configurations, in the order they run.
var clockNames = []string{"zk+2s", "zk-2s", "host+2s", "host-2s", "mixed"}

// Every configuration mixes the Locker's API forms: node-0
// Locker.NewScheduler, node-1 gocron.WithDistributedJobLocker and Attach,
// node-2 gocron.WithDistributedLocker and Attach.
var clockConfigs = map[string]clockConfig{
	"zk+2s":   {zk: 2 * time.Second, what: "ZooKeeper's clock 2 s ahead of the hosts'"},
	"zk-2s":   {zk: -2 * time.Second, what: "ZooKeeper's clock 2 s behind the hosts'"},
	"host+2s": {own: map[int][]string{1: {"-clock", "2s"}}, target: "node-1", clock: 2 * time.Second, what: "node-1's clock 2 s ahead of the others' (it runs the ticks; the faults hit it)"},
	"host-2s": {own: map[int][]string{1: {"-clock", "-2s"}}, what: "node-1's clock 2 s behind the others'"},
	"mixed": {own: map[int][]string{1: {"-lock-timeout", "3s"}, 2: {"-lock-timeout", "500ms", "-window", "800ms"}},
		what: "lock timeouts 1 s, 3 s and 500 ms, node-2's window 800 ms"},
}

// clockForms are the instances' API forms.
var clockForms = []string{fleet.FormScheduler, fleet.FormJobLocker, fleet.FormLocker}

// TestFleetClocks runs the Locker's fault fleet (TestFleetFaults': three
// gocron processes, timers 0/150/300 ms apart, 20 jobs every second and 3
// every 10 s with a 3-s window, attached) in each configuration, with a
// kill, a 5-s SIGSTOP mid-run and a cleanup with the defaults, a fault
// every -fleet.fault-every. Per run: no (job, tick) runs twice by
// scheduled time (gocron's, on the instance's own clock); every tick that
// ran nowhere is observed by an instance, with its job, as lost (held,
// failed, lost), never as already_ran or stale, but for a claim cut
// between its write and its run by the kill or the stop (counted); each
// job's LastRun names the instance of its last run.
func TestFleetClocks(t *testing.T) {
	if *fleetClocks == "" {
		t.Skip("a documented run: -fleet.clocks all -fleet.duration 80s")
	}
	names := strings.Split(*fleetClocks, ",")
	if *fleetClocks == "all" {
		names = clockNames
	}
	for _, name := range names {
		cfg, ok := clockConfigs[name]
		if !ok {
			t.Fatalf("-fleet.clocks: no configuration %q (want %s)", name, strings.Join(clockNames, ", "))
		}
		t.Run(name, func(t *testing.T) { fleetClock(t, cfg) })
	}
}

// fleetClock runs TestFleetClocks' fleet in cfg.
func fleetClock(t *testing.T, cfg clockConfig) {
	var opts []zkserver.Option
	if cfg.zk != 0 {
		opts = append(opts, zkserver.WithClockOffset(cfg.zk))
	}
	zc := zktest.Ensemble(t, 1, opts...)
	ctx := zktest.Context(t, *fleetDuration+5*time.Minute)
	d := *fleetDuration
	own := func(i int) (string, []string) { return "", append([]string{"-form", clockForms[i]}, cfg.own[i]...) }
	f := startFleetAt(t, zc.Addrs(), fleetOffsets, own, fleet.ModeLocker, d, fleetJobs, "-obs", "-slow", fmt.Sprint(slowJobs))
	fl := &faulted{fleetRun: f, target: cfg.target, clock: cfg.clock, killed: map[*instance]bool{}}
	done := make(chan []string, 1)
	go func() { done <- fl.play(t, ctx, zc, []string{"kill", "stop-run", "cleanup"}) }()
	time.Sleep(time.Until(f.start.Add(d)))
	told := <-done
	rs := f.wait(t, time.Until(f.start)+d+40*time.Second, fl.killedSet())
	rep := fleet.Check(rs.Runs, fleetJobs, 1, lastTick(d)-1, nil)
	lost := fleet.TellsLost(rep, rs.Obs)
	outside, stale := fl.cutClaims(lost.AlreadyRan, rs.Obs), fl.cutClaims(lost.Stale, rs.Obs)
	t.Logf("%s, %v: %v\n  faults: %s\n  lost ticks: %v (already_ran or stale: %d claims cut between their write and their run by the kill or the stop)\n  warnings: %s",
		cfg.what, d, rep, strings.Join(told, "; "), lost, len(lost.AlreadyRan)+len(lost.Stale)-len(outside)-len(stale), f.warnings())
	if faults := faultsJudge(rep, rs.Obs, func(ks []fleet.Key) []fleet.Key { return fl.cutClaims(ks, rs.Obs) }); len(faults) > 0 {
		t.Errorf("%s; the first already_ran outside a cut: %s; stale: %s", strings.Join(faults, "; "), explain(rs, outside), explain(rs, stale))
	}
	if n := f.count("runs more than once per tick"); n > 0 && len(rep.Duplicates) == 0 {
		t.Errorf("%d warnings that a job runs more than once per tick, in a run where none did:\n%s", n, f.grep("runs more than once per tick", 4))
	}
	fl.checkLastRuns(t, ctx, zc.Addrs(), rs)
}
