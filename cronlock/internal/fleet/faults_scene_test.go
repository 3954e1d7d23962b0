package fleet

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// The fleet with faults (issue 50): a documented run, not make test's.
//
//	cd cronlock && go test -count=1 -v -run TestFleetFaults ./internal/fleet/ -fleet.faults all -fleet.duration 2m
var fleetFaults = flag.String("fleet.faults", "", "TestFleetFaults: the faults, comma-separated (kill, stop-run, stop-idle, zk-restart, cleanup) or all; one every -fleet.fault-every, in turn")

var faultEvery = flag.Duration("fleet.fault-every", 20*time.Second, "TestFleetFaults: the time between two faults")

// allFaults are the faults in the order they come.
var allFaults = []string{"kill", "stop-run", "stop-idle", "zk-restart", "cleanup"}

// The wide-window jobs a cleanup with the defaults removes: every 10 s,
// a 3-s window (a cleanup's defaults wait 1.5 s).
const (
	slowJobs   = 3
	slowSpec   = "*/10 * * * * *"
	slowWindow = 3 * time.Second
)

// faultSession is the workers' session timeout: a killed worker's job
// locks stay held that long.
const faultSession = 10 * time.Second

// TestFleetFaults runs cronlock's fleet (three robfig/cron processes,
// timers 0/150/300 ms apart, 30 jobs every 1 or 2 s and 3 every 10 s with
// a 3-s window) with a fault every -fleet.fault-every, in turn: node-0
// SIGKILLed while its runs go on (started again 12 s later), SIGSTOPped
// 5 s from a tick (its runs under way), SIGSTOPped 5 s between its runs,
// ZooKeeper stopped and started again (3 s), and a cleanup with the
// defaults removing a wide-window job the fleet schedules. Per run: no
// (job, tick) runs twice, counted by robfig/cron's scheduled time; every
// tick that ran nowhere was observed as lost (held, failed, stale) by an
// instance, never as already_ran; no instance warns that a job runs more
// than once per tick; each job's LastRun (what tierlock ls lists) names
// the instance that made its last run.
func TestFleetFaults(t *testing.T) {
	if *fleetFaults == "" {
		t.Skip("a documented run: -fleet.faults all -fleet.duration 2m")
	}
	faults := strings.Split(*fleetFaults, ",")
	if *fleetFaults == "all" {
		faults = allFaults
	}
	ctx := zktest.Context(t, *fleetDuration+5*time.Minute)
	zk, err := zkserver.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { zk.Close() })
	jobs := fleetJobs()
	extra := []string{"-session-timeout", faultSession.String()}
	for i := range slowJobs {
		name := fmt.Sprintf("slow-%02d", i)
		jobs = append(jobs, Job{Name: name, Spec: slowSpec})
		extra = append(extra, "-window", name+"="+slowWindow.String())
	}
	d := *fleetDuration
	f := startFleet(t, "tierlock", zk.Addrs(), d, jobs, extra...)
	root := f.args["node-0"][slices.Index(f.args["node-0"], "-root")+1]
	done := make(chan []string, 1)
	go func() { done <- f.faults(t, ctx, zk, root, faults) }()
	rs := f.wait(t, fleetLead+d+time.Minute)
	told := <-done
	rep, err := Check(f.jobs, rs, f.start, f.start.Add(d))
	if err != nil {
		t.Fatal(err)
	}
	lost := TellsLost(rep, rs.Obs)
	t.Logf("tierlock fleet with faults, %v: %v\n  faults: %s\n  lost ticks: %v (of those observed as already_ran, %d claims cut between their write and their run: by a kill or a stop, or by a write's unknown outcome; held: %s)\n  warnings: %s",
		d, rep, strings.Join(told, "; "), lost, len(lost.AlreadyRan)-len(f.outsideCuts(lost.AlreadyRan, rs.Obs)), explain(rs, lost.Held), f.warnings())
	outside := func(ks []Key) []Key { return f.outsideCuts(ks, rs.Obs) }
	if faults := faultsJudge(rep, rs.Obs, outside); len(faults) > 0 {
		t.Errorf("%s; the first run twice: %s; lost, told by no instance: %s", strings.Join(faults, "; "), explain(rs, rep.Repeats), explain(rs, outside(lost.Untold)))
	}
	if n := f.count("runs more than once per tick"); n > 0 && rep.Repeated() == 0 {
		t.Errorf("%d warnings that a job runs more than once per tick, in a run where none did", n)
	}
	f.checkLastRuns(t, ctx, zk.Addrs(), root, rs)
}

// faults plays the faults in turn until the fleet's last 20 s, and returns
// what each did.
func (f *fleetRun) faults(t *testing.T, ctx context.Context, zk *zkserver.Cluster, root string, faults []string) []string {
	var told []string
	end := f.start.Add(*fleetDuration - 20*time.Second)
	for i, at := 0, f.start.Add(*faultEvery/2); at.Before(end); i, at = i+1, at.Add(*faultEvery) {
		time.Sleep(time.Until(at))
		fault := faults[i%len(faults)]
		what, err := f.fault(t, ctx, zk, root, fault, i)
		if err != nil {
			t.Errorf("fault %s: %v", fault, err)
		}
		told = append(told, fmt.Sprintf("+%v %s: %s", at.Sub(f.start).Round(time.Second), fault, what))
	}
	return told
}

// fault plays one fault, the i-th.
func (f *fleetRun) fault(t *testing.T, ctx context.Context, zk *zkserver.Cluster, root, fault string, i int) (string, error) {
	node := f.faulted()
	// The target's tick: its timers fire its offset after the fleet's.
	tick := time.Now().Truncate(time.Second).Add(time.Second + fleetOffsets[slices.Index(instances(), node)])
	switch fault {
	case "kill":
		time.Sleep(time.Until(tick.Add(15 * time.Millisecond))) // node-0's runs under way
		f.noteCut(tick)
		f.kill(node)
		go func() {
			time.Sleep(faultSession + 2*time.Second)
			f.launch(t, node)
		}()
		return node + " SIGKILLed 15 ms after a tick, started again 12 s later", nil
	case "stop-run", "stop-idle":
		after := 15 * time.Millisecond
		if fault == "stop-idle" {
			after = 600 * time.Millisecond // node-0's runs (1-50 ms) are over
		}
		if fault == "stop-run" {
			f.noteCut(tick)
		}
		time.Sleep(time.Until(tick.Add(after)))
		pid := f.proc(node).Pid()
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return "", err
		}
		time.Sleep(5 * time.Second)
		return fmt.Sprintf("%s SIGSTOPped 5 s from %v after a tick", node, after), syscall.Kill(pid, syscall.SIGCONT)
	case "zk-restart":
		if err := zk.Stop(0); err != nil {
			return "", err
		}
		time.Sleep(3 * time.Second)
		return "ZooKeeper stopped 3 s and started again", zk.Restart(ctx, 0)
	case "cleanup":
		return f.cleanup(ctx, zk.Addrs(), root, fmt.Sprintf("slow-%02d", i%slowJobs))
	}
	return "", fmt.Errorf("no fault %q (want %s)", fault, strings.Join(allFaults, ", "))
}

// cleanup removes job, which the fleet schedules, with a Runner of the
// defaults (a window of 500 ms and a lock timeout of 1 s, where the job's
// window is 3 s), 100 ms after one of its ticks: RemoveJob must refuse
// (ErrJobActive, or ErrLockHeld when a run holds the job's lock), and no
// tick run twice.
func (f *fleetRun) cleanup(ctx context.Context, servers []string, root, job string) (string, error) {
	s, err := zklock.Connect(ctx, servers)
	if err != nil {
		return "", err
	}
	defer s.Close()
	r, err := runonce.New(s, root, runonce.WithInstanceName("cleanup"))
	if err != nil {
		return "", err
	}
	defer r.Close()
	tick := time.Now().Truncate(10 * time.Second).Add(10 * time.Second)
	time.Sleep(time.Until(tick.Add(100 * time.Millisecond)))
	err = r.RemoveJob(ctx, job)
	what := fmt.Sprintf("RemoveJob(%s) with the defaults 100 ms after its tick: %v", job, err)
	if !errorsIsJobActive(err) && !errors.Is(err, runonce.ErrLockHeld) {
		return what, fmt.Errorf("RemoveJob of a job the fleet schedules: %v, want ErrJobActive or ErrLockHeld", err)
	}
	return what, nil
}

// checkLastRuns holds each job's LastRun (runrec's reading of the run
// node, tierlock ls's) to the instance that made its last run recorded.
func (f *fleetRun) checkLastRuns(t *testing.T, ctx context.Context, servers []string, root string, rs Records) {
	t.Helper()
	last := map[string]Run{}
	for _, r := range rs.Runs {
		// The last run is the last to start: a tick an instance whose
		// clock is ahead passed over runs later than a later tick.
		if l, ok := last[r.Job]; !ok || r.Start.After(l.Start) {
			last[r.Job] = r
		}
	}
	s, err := zklock.Connect(ctx, servers)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := runonce.New(s, root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	wrong := 0
	for _, job := range slices.Sorted(maps.Keys(last)) {
		got, err := r.LastRun(ctx, job)
		if err != nil {
			t.Fatal(err)
		}
		if got.By != last[job].Instance {
			wrong++
			t.Errorf("%s: LastRun names %s (at %v), the last run recorded is %s's (tick %v)", job, got.By, got.At, last[job].Instance, last[job].Tick)
		}
	}
	t.Logf("LastRun named the instance of the last run recorded for %d of %d jobs", len(last)-wrong, len(last))
}

// count counts the lines of the workers' logs that contain s.
func (f *fleetRun) count(s string) int {
	n := 0
	for _, l := range f.logs {
		n += strings.Count(l.String(), s)
	}
	return n
}

// warnings counts the workers' warnings and errors by message (up to its
// first colon): what a fleet's operator reads.
func (f *fleetRun) warnings() string {
	count := map[string]int{}
	for _, l := range f.logs {
		for _, line := range strings.Split(l.String(), "\n") {
			for _, level := range []string{"level=WARN", "level=ERROR"} {
				if _, msg, ok := strings.Cut(line, level+" msg="); ok {
					msg = strings.Trim(msg, `"`)
					msg, _, _ = strings.Cut(msg, ":")
					msg, _, _ = strings.Cut(msg, `" `)
					count[level[6:]+" "+msg]++
				}
			}
		}
	}
	var out []string
	for _, msg := range slices.Sorted(maps.Keys(count)) {
		out = append(out, fmt.Sprintf("%d × %q", count[msg], msg))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "; ")
}

// errorsIsJobActive reports whether err matches runonce.ErrJobActive.
func errorsIsJobActive(err error) bool { return errors.Is(err, runonce.ErrJobActive) }

// explain lists what the records say of the first few of keys: the runs
// and the observations of each.
func explain(rs Records, keys []Key) string {
	var out []string
	for _, k := range keys[:min(len(keys), 4)] {
		var said []string
		for _, r := range rs.Runs {
			if r.Job == k.Job && r.Tick.Equal(k.Tick) {
				said = append(said, fmt.Sprintf("ran on %s fired %s", r.Instance, r.Fired.UTC().Format("05.000")))
			}
		}
		for _, o := range rs.Obs {
			if o.Job == k.Job && o.Tick.Equal(k.Tick) {
				said = append(said, o.Instance+" "+o.Outcome)
			}
		}
		out = append(out, fmt.Sprintf("%s %s: %s", k.Job, k.Tick.UTC().Format("04:05"), strings.Join(said, ", ")))
	}
	return fmt.Sprintf("%d, the first: %s", len(keys), strings.Join(out, "; "))
}

// instances are the fleet's instances' names, in fleetOffsets' order.
func instances() []string {
	var names []string
	for i := range fleetOffsets {
		names = append(names, fmt.Sprintf("node-%d", i))
	}
	return names
}

// faulted is the instance the faults hit: node-0 unless the run says
// otherwise.
func (f *fleetRun) faulted() string {
	if f.target != "" {
		return f.target
	}
	return "node-0"
}

// noteCut notes that a fault cut an instance a moment after tick: its
// claims under way then may have written their runs and not made them.
func (f *fleetRun) noteCut(tick time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cuts = append(f.cuts, tick.Add(f.clock)) // named as the instance names its ticks
}

// outsideCuts returns the keys that no cut claim explains: a claim cut
// between its write and its run, by a kill or a stop under way (a tick up
// to 2 s before the cut: a */2 job's), or by a failure of its own (an
// instance observed the tick as failed: a write whose outcome is unknown,
// or answered too late). The rule counts such a write as the tick's run
// (a tick lost, never run twice), and the others cannot tell it from a
// run.
func (f *fleetRun) outsideCuts(keys []Key, obs []Obs) []Key {
	failed := map[Key]bool{}
	for _, o := range obs {
		if o.Outcome == "failed" {
			failed[Key{o.Job, o.Tick.UTC()}] = true
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Key
	for _, k := range keys {
		if !failed[k] && !slices.ContainsFunc(f.cuts, func(c time.Time) bool { return k.Tick.After(c.Add(-2*time.Second)) && !k.Tick.After(c) }) {
			out = append(out, k)
		}
	}
	return out
}
