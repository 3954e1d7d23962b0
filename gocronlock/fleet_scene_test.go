package gocronlock_test

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/gocronlock/internal/fleet"
	"github.com/tierlock/tierlock/internal/child"
	"github.com/tierlock/tierlock/internal/zktest"
)

// fleetDuration is how long the fleet tests' instances schedule: the
// default keeps `go test` short; the full run is
// `go test -run TestFleet -fleet.duration 2m .`.
var (
	fleetDuration = flag.Duration("fleet.duration", 10*time.Second, "how long the fleet tests' instances schedule")
	fleetVerbose  = flag.Bool("fleet.verbose", false, "the fleet tests log the first of each of the instances' warnings in full")
)

// The shape of gocron issue #841: 3 instances whose timers are 0, 150 and
// 300 ms apart, 20 jobs every second, jobs of 1 to 50 ms.
var fleetOffsets = []time.Duration{0, 150 * time.Millisecond, 300 * time.Millisecond}

const (
	fleetJobs   = 20
	fleetPeriod = time.Second
)

// instance is one running fleet process and what it wrote.
type instance struct {
	name string
	exe  string   // its binary: "" for this test binary
	args []string // its flags
	proc *child.Proc
	logs zktest.SyncBuffer // its stderr
}

// fleetRun is a fleet of instances and the records they write, gathered
// as they come.
type fleetRun struct {
	root      string // the Locker's root, or the election's path
	start     time.Time
	instances []*instance
	mu        sync.Mutex
	records   fleet.Records
	readers   sync.WaitGroup
}

// startFleet starts one instance per offset, in mode, with fleetJobs jobs,
// scheduling from a common start a few seconds ahead for duration.
func startFleet(t *testing.T, mode string, duration time.Duration, extra ...string) *fleetRun {
	t.Helper()
	return startFleetOn(t, zktest.Servers(t), mode, duration, fleetJobs, extra...)
}

// startFleetOn is startFleet with the servers and the number of jobs.
func startFleetOn(t *testing.T, servers []string, mode string, duration time.Duration, jobs int, extra ...string) *fleetRun {
	t.Helper()
	return startFleetAt(t, servers, fleetOffsets, nil, mode, duration, jobs, extra...)
}

// perInstance gives the i-th instance of a fleet flags of its own and, if
// exe is not "", another binary: a test binary of an earlier version of
// this module, for a fleet upgraded one instance at a time.
type perInstance func(i int) (exe string, args []string)

// startFleetAt is startFleetOn with the instances' offsets and, if own is
// not nil, what each instance has of its own; each instance's stderr (its
// logs) is kept in the instance.
func startFleetAt(t *testing.T, servers []string, offsets []time.Duration, own perInstance, mode string, duration time.Duration, jobs int, extra ...string) *fleetRun {
	t.Helper()
	root := zktest.Path(t)
	f := &fleetRun{root: root, start: time.Now().Truncate(time.Second).Add(3 * time.Second)}
	for i, off := range offsets {
		name := fmt.Sprintf("node-%d", i)
		args := append([]string{
			"-zk", strings.Join(servers, ","), "-name", name, "-mode", mode, "-root", root,
			"-jobs", fmt.Sprint(jobs), "-period", fleetPeriod.String(), "-offset", off.String(),
			"-start", fmt.Sprint(f.start.UnixMilli()), "-duration", duration.String(),
		}, extra...)
		in := &instance{name: name}
		if own != nil {
			var more []string
			in.exe, more = own(i)
			args = append(args, more...)
		}
		in.args = args
		f.launch(t, in)
	}
	return f
}

// launch starts in, an instance of f, and gathers its records.
func (f *fleetRun) launch(t *testing.T, in *instance) {
	t.Helper()
	p, err := child.Start(child.Spec{Role: fleetRole, Task: in.args, Exe: in.exe, Args: []string{"-test.run=^$"}, Stderr: &in.logs})
	if err != nil {
		t.Fatal(err)
	}
	in.proc = p
	f.mu.Lock()
	f.instances = append(f.instances, in)
	f.mu.Unlock()
	t.Cleanup(p.Kill)
	f.readers.Go(func() { f.read(t, in) })
}

// rejoin starts in again, as an instance that comes back under its name
// (-join: from the fleet's next tick but one).
func (f *fleetRun) rejoin(t *testing.T, in *instance) *instance {
	t.Helper()
	again := &instance{name: in.name, exe: in.exe, args: append(slices.Clone(in.args), "-join")}
	f.launch(t, again)
	return again
}

// read gathers an instance's records until it exits.
func (f *fleetRun) read(t *testing.T, in *instance) {
	for line := range in.proc.Lines() {
		f.mu.Lock()
		err := f.records.Parse(strings.NewReader(string(line) + "\n"))
		f.mu.Unlock()
		if err != nil {
			t.Errorf("%s: %v", in.name, err)
		}
	}
}

// wait waits for every instance to end and reports those that failed,
// except the killed ones.
func (f *fleetRun) wait(t *testing.T, limit time.Duration, killed map[*instance]bool) fleet.Records {
	t.Helper()
	deadline := time.After(limit)
	f.mu.Lock()
	ins := slices.Clone(f.instances)
	f.mu.Unlock()
	for _, in := range ins {
		select {
		case <-in.proc.Exited():
		case <-deadline:
			t.Fatalf("%s still runs after %v", in.name, limit)
		}
		if err := in.proc.Err(); err != nil && !killed[in] {
			t.Errorf("%s", in.proc.Describe(in.name))
		}
	}
	zktest.Wait(t, "the instances' output readers", &f.readers)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.records
}

// sideBySide runs a short fleet test in parallel with the other short
// ones (make test's time: about 15 s for all instead of a minute); full
// length ones (-fleet.duration 30s and more) run one at a time, for their
// figures.
func sideBySide(t *testing.T) {
	if *fleetDuration < 30*time.Second {
		t.Parallel()
	}
}

// lastTick is the last tick every instance scheduled within duration.
func lastTick(duration time.Duration) int64 { return int64(duration/fleetPeriod) - 1 }

// TestFleetLocker runs #841's shape with real gocron schedulers in three
// processes: every (job, tick) runs once, and at least 99 % of the ticks
// run, or each tick that ran nowhere was told lost by an instance
// (checkCoverage). The first
// and the last tick (start-up, shutdown) are not counted for coverage;
// duplicates are counted over all.
func TestFleetLocker(t *testing.T) {
	if testing.Short() {
		t.Skip("fleet test: -short")
	}
	sideBySide(t)
	d := *fleetDuration
	f := startFleet(t, fleet.ModeLocker, d, "-obs")
	rs := f.wait(t, time.Until(f.start)+d+40*time.Second, nil)
	rep := fleet.Check(rs.Runs, fleetJobs, 1, lastTick(d)-1, nil)
	t.Logf("locker fleet, %v, 3 processes, offsets %v, %d jobs every %v: %v", d, fleetOffsets, fleetJobs, fleetPeriod, rep)
	if len(rep.Duplicates) > 0 {
		t.Errorf("%d (job, tick) ran more than once: %v", len(rep.Duplicates), rep.Duplicates)
	}
	checkCoverage(t, rep, rs.Obs, 0.99, f.warnings())
}

// checkCoverage fails t when less than want of rep's ticks ran and a
// tick that ran nowhere was not told lost by an instance (coverageFault).
// warnings, what the fleet's Lockers said, go to the log. How many ticks a
// fleet keeps depends on its share of the processor and the disk: make
// test runs the fleets under -race, side by side with each other and with
// the replay, the nemesis and a busy core, and a loaded run kept 302 of
// TestFleetScale's 450 ticks and 156 of TestFleetSpread's 160; loaded run
// 107 kept 12 of 450, its Locks' p50 1.24 s, and the Lockers told the
// ensemble silent for their lock timeout. What holds on any machine is the
// Locker's word, tick by tick: a tick lost is observed as lost (held: its
// lock held; failed: ZooKeeper silent, an overload) by an instance; lost
// without it, or told only unknown, it is a fault.
func checkCoverage(t *testing.T, rep fleet.Report, obs []fleet.Obs, want float64, warnings string) {
	t.Helper()
	if fault := coverageFault(rep, obs, want); fault != "" {
		t.Errorf("%s; the Locker's warnings: %s", fault, warnings)
		return
	}
	if c := rep.Coverage(); c < want {
		t.Logf("%.2f%% of the ticks ran, under %.1f%%: every tick that ran nowhere was told lost by an instance (%s); the rest needs the processor this fleet asks for", 100*c, 100*want, warnings)
	}
}

// coverageFault says what is wrong with rep's coverage, "" if nothing:
// less than want of its ticks ran, and ticks that ran nowhere were not
// observed as lost (fleet.Untold).
func coverageFault(rep fleet.Report, obs []fleet.Obs, want float64) string {
	if rep.Coverage() >= want {
		return ""
	}
	untold := fleet.Untold(rep, obs)
	if len(untold) == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f%% of the ticks ran, want at least %.1f%%, and %d of the %d that ran nowhere were told lost (held, failed or lost) by no instance, e.g. %v; of the ticks that ran nowhere, %v",
		100*rep.Coverage(), 100*want, len(untold), len(rep.Lost), untold[:min(len(untold), 5)], fleet.TellsLost(fleet.Report{Lost: untold}, obs))
}

// TestFleetWindowTooSmall is the check's own check: with a window shorter
// than the instances' offsets the Locker is a lock held for the run and
// no more, and the same fleet runs every tick on every instance, as
// gocron's Redis adapter does in #841. The checker must see it: most
// ticks ran twice or more. How many times each ran is the machine's: an
// instance whose timer fires late, into another's run, finds the lock
// held (a loaded make test: 1.96 runs per tick, 99 duplicated ticks of
// 80; loaded run 112: 1.55, 33 of 80; idle, about 3). A quarter of the
// ticks run twice is the check seeing it.
func TestFleetWindowTooSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("fleet test: -short")
	}
	sideBySide(t)
	const d = 6 * time.Second
	f := startFleet(t, fleet.ModeLocker, d, "-window", "1ms")
	rs := f.wait(t, time.Until(f.start)+d+40*time.Second, nil)
	rep := fleet.Check(rs.Runs, fleetJobs, 1, lastTick(d)-1, nil)
	t.Logf("locker fleet with a 1 ms window, %v: %v", d, rep)
	if len(rep.Duplicates) < rep.Expected/4 {
		t.Errorf("%.3f runs per tick, %d duplicated: the check would not catch a lock without the rule", rep.RunsPerTick(), len(rep.Duplicates))
	}
}

// TestFleetElector runs three processes with the Elector (2 s sessions),
// SIGKILLs the leader, and checks that another leads within the session
// timeout and a second, that no (job, tick) runs twice, and that the
// ticks outside the failover all run.
func TestFleetElector(t *testing.T) {
	if testing.Short() {
		t.Skip("fleet test: -short")
	}
	sideBySide(t)
	const sessionTimeout = 2 * time.Second
	d := *fleetDuration
	f := startFleet(t, fleet.ModeElector, d, "-session-timeout", sessionTimeout.String())
	time.Sleep(time.Until(f.start.Add(d / 3)))
	victim := f.leader()
	if victim == nil {
		t.Fatal("no leader a third into the run")
	}
	killed := time.Now()
	victim.proc.Kill()
	var next string
	var led time.Time
	zktest.Eventually(t, sessionTimeout+5*time.Second, "a new leader", func() bool {
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
	failover := led.Sub(killed)
	rs := f.wait(t, time.Until(f.start)+d+40*time.Second, map[*instance]bool{victim: true})
	from, to := int64(killed.Sub(f.start)/fleetPeriod), int64(led.Sub(f.start)/fleetPeriod)+1
	rep := fleet.Check(rs.Runs, fleetJobs, 1, lastTick(d)-1, func(tick int64) bool { return tick >= from && tick <= to })
	t.Logf("elector fleet, %v: %s killed, %s led %v later (session timeout %v); ticks %d-%d left out: %v",
		d, victim.name, next, failover.Round(time.Millisecond), sessionTimeout, from, to, rep)
	if failover > sessionTimeout+time.Second {
		t.Errorf("failover took %v, want at most %v", failover, sessionTimeout+time.Second)
	}
	if len(rep.Duplicates) > 0 {
		t.Errorf("%d (job, tick) ran more than once: %v", len(rep.Duplicates), rep.Duplicates)
	}
	if rep.Coverage() < 0.99 {
		t.Errorf("%.2f%% of the ticks ran, want at least 99%%", 100*rep.Coverage())
	}
}

// leader returns the instance leading now, by the records.
func (f *fleetRun) leader() *instance {
	f.mu.Lock()
	defer f.mu.Unlock()
	leading := map[string]bool{}
	for _, l := range f.records.Leaders {
		leading[l.Node] = l.Leading
	}
	for _, in := range f.instances {
		if leading[in.name] {
			return in
		}
	}
	return nil
}

// warnings counts the instances' warnings and errors by message (up to
// its first colon): what a fleet's operator reads.
func (f *fleetRun) warnings() string {
	f.mu.Lock()
	ins := slices.Clone(f.instances)
	f.mu.Unlock()
	count, first := map[string]int{}, map[string]string{}
	for _, in := range ins {
		for _, line := range strings.Split(in.logs.String(), "\n") {
			// slog.Default's text: "date time LEVEL message key=value ...".
			for _, level := range []string{" WARN ", " ERROR "} {
				if _, msg, ok := strings.Cut(line, level); ok {
					msg, _, _ = strings.Cut(msg, ":")
					msg, _, _ = strings.Cut(msg, " component=")
					key := strings.TrimSpace(level) + " " + msg
					if count[key]++; count[key] == 1 && *fleetVerbose {
						first[key] = in.name + ": " + line
					}
				}
			}
		}
	}
	var out []string
	for msg, n := range count {
		out = append(out, fmt.Sprintf("%d × %q", n, msg))
		if first[msg] != "" {
			out = append(out, "the first: "+first[msg])
		}
	}
	slices.Sort(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "; ")
}
