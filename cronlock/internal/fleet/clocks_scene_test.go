package fleet

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/internal/zktest"
)

// The fleet on one clock, in any configuration (issue 56): a documented
// run, not make test's.
//
//	cd cronlock && go test -count=1 -timeout 30m -v -run TestFleetClocks ./internal/fleet/ -fleet.clocks all -fleet.duration 80s
//
// fleetLogs keeps a failing fleet's logs, every line of each instance,
// for what the failure's dozen lines do not show.
var fleetLogs = flag.String("fleet.logs", "", "TestFleetClocks: a directory to write each instance's whole log (at Debug level) to when ticks that ran were told lost or held")

var fleetClocks = flag.String("fleet.clocks", "", "TestFleetClocks: the configurations, comma-separated ("+strings.Join(clockNames, ", ")+") or all")

// clockConfig is one configuration of TestFleetClocks: ZooKeeper's clock
// off the hosts' (libfaketime), flags of the instances' own, the instance
// the faults hit.
type clockConfig struct {
	zk     time.Duration
	extra  []string
	target string
	clock  time.Duration // the target's -clock
	what   string
	// old is the instance of an older version (-old-record), if any: its
	// observer tells as its version did, so the checks of what the fleet
	// tells hold the others to them, not it (its runs count as any).
	old string
}

// clockNames are the configurations, in the order they run.
var clockNames = []string{"zk+2s", "zk-2s", "host+2s", "host-2s", "mixed", "mixed-fleet"}

// Every configuration mixes cronlock's two API forms (node-1: the Cron's
// chain, locker.WithChain and Named; the others: Wrap per job, the Cron
// attached), but mixed-fleet (issue 71): node-0 writes the run node as
// runonce did before the tick names (e2b5ae4: the old fields alone, the
// names dropped, decided by the server's clock), node-2's Cron is not
// attached (Wrap alone: its claims name no tick), node-1's chain as ever;
// the faults hit node-0.
var clockConfigs = map[string]clockConfig{
	"zk+2s":   {zk: 2 * time.Second, what: "ZooKeeper's clock 2 s ahead of the hosts'"},
	"zk-2s":   {zk: -2 * time.Second, what: "ZooKeeper's clock 2 s behind the hosts'"},
	"host+2s": {extra: []string{"node-1:-clock=2s"}, target: "node-1", clock: 2 * time.Second, what: "node-1's clock 2 s ahead of the others' (it runs the ticks; the faults hit it)"},
	"host-2s": {extra: []string{"node-1:-clock=-2s"}, what: "node-1's clock 2 s behind the others'"},
	"mixed": {extra: []string{"node-1:-lock-timeout=3s", "node-2:-lock-timeout=500ms", "node-2:-default-window=800ms"},
		what: "lock timeouts 1 s, 3 s and 500 ms, node-2's window 800 ms"},
	"mixed-fleet": {extra: []string{"node-0:-old-record", "node-2:-form=" + FormLoose}, old: "node-0",
		what: "node-0 an old writer (the record before the tick names), node-2's Cron not attached, node-1's chain"},
}

// clockFaults are the faults of every configuration: a kill, a 5-s pause
// mid-run, a cleanup with the defaults.
var clockFaults = []string{"kill", "stop-run", "cleanup"}

// TestFleetClocks runs the fault fleet (TestFleetFaults': three
// robfig/cron processes, timers 0/150/300 ms apart, 30 jobs every 1 or
// 2 s and 3 every 10 s with a 3-s window, the Crons attached) in each
// configuration, with a kill, a 5-s SIGSTOP mid-run and a cleanup with
// the defaults, a fault every -fleet.fault-every. Per run: no (job, tick)
// runs twice by scheduled time (robfig/cron's Entry.Prev, on the
// instance's own clock); every tick that ran nowhere is observed by an
// instance, with its job, as lost (held, failed, lost, unknown), never as
// already_ran or stale, but for a claim cut between its write and its run
// by the kill or the stop (counted); no tick that ran is observed as lost
// or held; each job's LastRun names the instance of its last run. An
// older version's instance (mixed-fleet's node-0) is not held to what it
// tells.
func TestFleetClocks(t *testing.T) {
	if *fleetClocks == "" {
		t.Skip("a documented run: -fleet.clocks all -fleet.duration 80s")
	}
	if *fleetLogs != "" {
		t.Setenv(DebugEnv, "1") // the workers inherit it: their logs at Debug, to read
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
	ctx := zktest.Context(t, *fleetDuration+5*time.Minute)
	var opts []zkserver.Option
	if cfg.zk != 0 {
		opts = append(opts, zkserver.WithClockOffset(cfg.zk))
	}
	zk, err := zkserver.Start(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { zk.Close() })
	jobs := fleetJobs()
	extra := append([]string{"-session-timeout", faultSession.String(), "node-1:-form=" + FormChain}, cfg.extra...)
	for i := range slowJobs {
		name := fmt.Sprintf("slow-%02d", i)
		jobs = append(jobs, Job{Name: name, Spec: slowSpec})
		extra = append(extra, "-window", name+"="+slowWindow.String())
	}
	d := *fleetDuration
	f := startFleet(t, "tierlock", zk.Addrs(), d, jobs, extra...)
	f.target, f.clock = cfg.target, cfg.clock
	root := f.args["node-0"][slices.Index(f.args["node-0"], "-root")+1]
	done := make(chan []string, 1)
	go func() { done <- f.faults(t, ctx, zk, root, clockFaults) }()
	rs := f.wait(t, fleetLead+d+time.Minute)
	told := <-done
	rep, err := Check(f.jobs, rs, f.start, f.start.Add(d))
	if err != nil {
		t.Fatal(err)
	}
	f.judgeClocks(t, cfg, rep, rs, told)
	f.checkLastRuns(t, ctx, zk.Addrs(), root, rs)
}

// judgeClocks holds TestFleetClocks' run in cfg to its checks, by what
// the instances but cfg.old told (obs).
func (f *fleetRun) judgeClocks(t *testing.T, cfg clockConfig, rep Report, rs Records, told []string) {
	t.Helper()
	in, err := WindowKeys(f.jobs, f.start, f.start.Add(*fleetDuration))
	if err != nil {
		t.Fatal(err)
	}
	obs := ObsExcept(rs.Obs, cfg.old)
	lost := TellsLost(rep, obs)
	ranLost := f.notTakenBack(ToldLostRan(rs, obs, in), obs)
	cut := len(lost.AlreadyRan) + len(lost.Stale) - len(f.outsideCuts(lost.AlreadyRan, obs)) - len(f.outsideCuts(lost.Stale, obs))
	t.Logf("%s, %v: %v\n  faults: %s\n  lost ticks: %v (already_ran or stale: %d claims cut between their write and their run by the kill or the stop)\n  ticks run told lost or held: %d\n  warnings: %s",
		cfg.what, *fleetDuration, rep, strings.Join(told, "; "), lost, cut, len(ranLost), f.warnings())
	if cfg.old != "" {
		t.Logf("  %s (an older version) told, not judged: %v; ticks run it told lost or held: %d", cfg.old, TellsLost(rep, ObsOf(rs.Obs, cfg.old)), len(ToldLostRan(rs, ObsOf(rs.Obs, cfg.old), in)))
	}
	outside := func(ks []Key) []Key { return f.outsideCuts(ks, obs) }
	if faults := faultsJudge(rep, obs, outside); len(faults) > 0 {
		t.Errorf("%s; the first run twice: %s; lost, told by no instance: %s", strings.Join(faults, "; "), explain(rs, rep.Repeats), explain(rs, outside(lost.Untold)))
	}
	if len(ranLost) > 0 {
		t.Errorf("ticks that ran observed as lost or held: %s; the instances said:\n%s", explain(rs, ranLost), f.toldOf(t, ranLost))
	}
	if n := f.count("runs more than once per tick"); n > 0 && rep.Repeated() == 0 {
		t.Errorf("%d warnings that a job runs more than once per tick, in a run where none did", n)
	}
}

// notTakenBack returns the ticks of keys (ticks that ran, told lost or
// held) that were told lost, or held and not taken back. An instance that
// finds a job's lock held tells the tick lost "unless the holder runs them
// after" and, when the lock is free again, how many of them the record
// shows run since (ticks_run_after): a paused holder, or one whose clock is
// behind, runs them late, once. Its held ticks that ran are told truly when
// its take-backs for the job cover them.
func (f *fleetRun) notTakenBack(keys []Key, obs []Obs) []Key {
	ran := map[Key]bool{}
	for _, k := range keys {
		ran[k] = true
	}
	bad := map[Key]bool{}
	held := map[[2]string][]Key{} // (instance, job): its held ticks that ran
	for _, o := range obs {
		k := Key{o.Job, o.Tick.UTC()}
		switch {
		case !ran[k]:
		case o.Outcome == "held":
			held[[2]string{o.Instance, o.Job}] = append(held[[2]string{o.Instance, o.Job}], k)
		case o.Outcome == "lost":
			bad[k] = true
		}
	}
	for ij, ks := range held {
		if len(ks) > f.ranAfter(ij[0], ij[1]) {
			for _, k := range ks {
				bad[k] = true
			}
		}
	}
	return slices.DeleteFunc(slices.Clone(keys), func(k Key) bool { return !bad[k] })
}

// ranAfter sums the ticks instance took back for job: ticks_run_after of
// its "job's lock free again" lines and of those that decide the ticks
// such a line left undecided ("job's held ticks decided").
func (f *fleetRun) ranAfter(instance, job string) int {
	n := 0
	for _, line := range strings.Split(f.logs[instance].String(), "\n") {
		end := strings.Contains(line, `msg="job's lock free again"`) || strings.Contains(line, `msg="job's held ticks decided`)
		if !end || !strings.Contains(line, " job="+job+" ") {
			continue
		}
		if _, v, ok := strings.Cut(line, " ticks_run_after="); ok {
			v, _, _ = strings.Cut(v, " ")
			m, _ := strconv.Atoi(v)
			n += m
		}
	}
	return n
}

// toldOf returns the workers' log lines (warnings and errors) that name
// the jobs of the first few of keys, at most 12; with -fleet.logs, it
// writes every line to a directory of the configuration's first.
func (f *fleetRun) toldOf(t *testing.T, keys []Key) string {
	if d := *fleetLogs; d != "" {
		d = filepath.Join(d, filepath.Base(t.Name())) // the configuration's
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Logf("-fleet.logs: %v", err)
		}
		for instance, b := range f.logs {
			if err := os.WriteFile(filepath.Join(d, instance+".log"), []byte(b.String()), 0o644); err != nil {
				t.Logf("-fleet.logs: %v", err)
			}
		}
		t.Logf("-fleet.logs: the instances' logs in %s", d)
	}
	var out []string
	for _, instance := range slices.Sorted(maps.Keys(f.logs)) {
		for _, line := range strings.Split(f.logs[instance].String(), "\n") {
			for _, k := range keys[:min(len(keys), 3)] {
				if len(out) < 12 && strings.Contains(line, "job="+k.Job+" ") && !strings.Contains(line, "level=INFO") && !strings.Contains(line, "level=DEBUG") {
					out = append(out, instance+": "+line)
				}
			}
		}
	}
	return strings.Join(out, "\n")
}
