package gocronlock_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tierlock/tierlock/gocronlock"
	"github.com/tierlock/tierlock/gocronlock/internal/fleet"
	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// The fleet with faults (issue 50): a documented run, not make test's.
//
//	cd gocronlock && go test -count=1 -v -run TestFleetFaults . -fleet.faults all -fleet.duration 2m
var (
	fleetFaults = flag.String("fleet.faults", "", "TestFleetFaults: the faults, comma-separated (kill, stop-run, stop-idle, zk-restart, cleanup) or all; one every -fleet.fault-every, in turn")
	faultEvery  = flag.Duration("fleet.fault-every", 20*time.Second, "TestFleetFaults: the time between two faults")
)

// allFaults are the faults in the order they come.
var allFaults = []string{"kill", "stop-run", "stop-idle", "zk-restart", "cleanup"}

// The fleet's wide-window jobs (the instances' -slow): every 10 s, a 3-s
// window, which a cleanup with the defaults (500 ms, 1 s) would not wait
// for.
const (
	slowJobs     = 3
	faultSession = 4 * time.Second // the instances' (-session-timeout's default)
)

// TestFleetFaults runs the Locker's fleet (three gocron processes, timers
// 0/150/300 ms apart, 20 jobs every second and 3 every 10 s with a 3-s
// window, attached: each run claimed by its scheduled tick) with a fault
// every -fleet.fault-every, in turn: node-0 SIGKILLed while its runs go
// on (started again a session timeout and 2 s later), SIGSTOPped 5 s from
// a tick (its runs under way) and 5 s between its runs, ZooKeeper stopped
// and started again (3 s), and a cleanup with the defaults removing a
// wide-window job the fleet schedules. Per run: no (job, tick) runs twice,
// counted by gocron's scheduled time; every tick that ran nowhere was
// observed as lost by an instance, and as already_ran only where the
// fault cut a claim between its write and its run; no instance warns that
// a job runs more than once per tick; each job's LastRun (what tierlock ls
// lists) names the instance that made its last run.
func TestFleetFaults(t *testing.T) {
	if *fleetFaults == "" {
		t.Skip("a documented run: -fleet.faults all -fleet.duration 2m")
	}
	faults := strings.Split(*fleetFaults, ",")
	if *fleetFaults == "all" {
		faults = allFaults
	}
	zc := zktest.Ensemble(t, 1)
	ctx := zktest.Context(t, *fleetDuration+5*time.Minute)
	d := *fleetDuration
	f := startFleetAt(t, zc.Addrs(), fleetOffsets, nil, fleet.ModeLocker, d, fleetJobs, "-obs", "-slow", fmt.Sprint(slowJobs))
	fl := &faulted{fleetRun: f, killed: map[*instance]bool{}}
	done := make(chan []string, 1)
	go func() { done <- fl.play(t, ctx, zc, faults) }()
	time.Sleep(time.Until(f.start.Add(d)))
	told := <-done
	rs := f.wait(t, time.Until(f.start)+d+40*time.Second, fl.killedSet())
	rep := fleet.Check(rs.Runs, fleetJobs, 1, lastTick(d)-1, nil)
	lost := fleet.TellsLost(rep, rs.Obs)
	cut := fl.cutClaims(lost.AlreadyRan, rs.Obs)
	t.Logf("locker fleet with faults, %v: %v\n  faults: %s\n  lost ticks: %v (of those observed as already_ran, %d claims cut between their write and their run: by a kill or a stop, or by a write's unknown outcome)\n  warnings: %s",
		d, rep, strings.Join(told, "; "), lost, len(lost.AlreadyRan)-len(cut), f.warnings())
	if faults := faultsJudge(rep, rs.Obs, func(ks []fleet.Key) []fleet.Key { return fl.cutClaims(ks, rs.Obs) }); len(faults) > 0 {
		t.Errorf("%s; the first already_ran outside a cut: %s", strings.Join(faults, "; "), explain(rs, cut))
	}
	if n := f.count("runs more than once per tick"); n > 0 && len(rep.Duplicates) == 0 {
		t.Errorf("%d warnings that a job runs more than once per tick, in a run where none did:\n%s", n, f.grep("runs more than once per tick", 4))
	}
	t.Logf("the outages' lines:\n%s", f.grep("ZooKeeper", 12))
	fl.checkLastRuns(t, ctx, zc.Addrs(), rs)
}

// faulted is a fleet under faults: the instances killed, and the ticks
// the faults landed in.
type faulted struct {
	*fleetRun
	target string        // the instance the faults hit ("": node-0)
	clock  time.Duration // its clock's offset from the others' (-clock)
	mu     sync.Mutex
	killed map[*instance]bool
	cuts   []int64 // ticks in which a kill or a stop cut the target's claims
}

// play plays the faults in turn until the fleet's last 20 s, and returns
// what each did.
func (f *faulted) play(t *testing.T, ctx context.Context, zc *zkserver.Cluster, faults []string) []string {
	var told []string
	end := f.start.Add(*fleetDuration - 20*time.Second)
	for i, at := 0, f.start.Add(*faultEvery/2); at.Before(end); i, at = i+1, at.Add(*faultEvery) {
		time.Sleep(time.Until(at))
		fault := faults[i%len(faults)]
		what, err := f.fault(t, ctx, zc, fault, i)
		if err != nil {
			t.Errorf("fault %s: %v", fault, err)
		}
		told = append(told, fmt.Sprintf("+%v %s: %s", at.Sub(f.start).Round(time.Second), fault, what))
	}
	return told
}

// targetIndex is the index of the faults' target in fleetOffsets.
func (f *faulted) targetIndex() int {
	var i int
	if f.target != "" {
		_, _ = fmt.Sscanf(f.target, "node-%d", &i)
	}
	return i
}

// node0 is the faults' target's instance now (started again after a
// kill): node-0's, unless the run says otherwise.
func (f *faulted) node0() *instance {
	name := f.target
	if name == "" {
		name = "node-0"
	}
	f.fleetRun.mu.Lock()
	defer f.fleetRun.mu.Unlock()
	var last *instance
	for _, in := range f.instances {
		if in.name == name {
			last = in
		}
	}
	return last
}

// fault plays one fault, the i-th.
func (f *faulted) fault(t *testing.T, ctx context.Context, zc *zkserver.Cluster, fault string, i int) (string, error) {
	// The target's tick: its timers fire its offset after the fleet's.
	tick := time.Now().Truncate(fleetPeriod).Add(fleetPeriod + fleetOffsets[f.targetIndex()])
	switch fault {
	case "kill":
		time.Sleep(time.Until(tick.Add(15 * time.Millisecond))) // node-0's runs under way
		in := f.node0()
		f.mu.Lock()
		f.killed[in] = true
		f.cuts = append(f.cuts, int64((tick.Sub(f.start)+f.clock)/fleetPeriod))
		f.mu.Unlock()
		in.proc.Kill()
		time.Sleep(faultSession + 2*time.Second)
		f.rejoin(t, in)
		return in.name + " SIGKILLed 15 ms after a tick, started again 6 s later", nil
	case "stop-run", "stop-idle":
		after := 15 * time.Millisecond
		if fault == "stop-idle" {
			after = 600 * time.Millisecond
		} else {
			f.mu.Lock()
			f.cuts = append(f.cuts, int64((tick.Sub(f.start)+f.clock)/fleetPeriod))
			f.mu.Unlock()
		}
		time.Sleep(time.Until(tick.Add(after)))
		in := f.node0()
		pid := in.proc.Pid()
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return "", err
		}
		time.Sleep(5 * time.Second)
		return fmt.Sprintf("%s SIGSTOPped 5 s from %v after a tick", in.name, after), syscall.Kill(pid, syscall.SIGCONT)
	case "zk-restart":
		if err := zc.Stop(0); err != nil {
			return "", err
		}
		time.Sleep(3 * time.Second)
		return "ZooKeeper stopped 3 s and started again", zc.Restart(ctx, 0)
	case "cleanup":
		return f.cleanup(ctx, zc.Addrs(), fmt.Sprintf("slow-%02d", i%slowJobs))
	}
	return "", fmt.Errorf("no fault %q (want %s)", fault, strings.Join(allFaults, ", "))
}

// cleanup removes job, which the fleet schedules every 10 s with a 3-s
// window, with a Locker of the defaults, 100 ms after one of its ticks:
// RemoveJob must refuse (ErrJobActive, or ErrLockHeld when a run holds
// the job's lock), and no tick run twice.
func (f *faulted) cleanup(ctx context.Context, servers []string, job string) (string, error) {
	s, err := zklock.Connect(ctx, servers)
	if err != nil {
		return "", err
	}
	defer s.Close()
	l, err := gocronlock.NewLocker(s, f.root)
	if err != nil {
		return "", err
	}
	defer l.Close()
	tick := f.start.Add(time.Since(f.start).Truncate(10*fleetPeriod) + 10*fleetPeriod)
	time.Sleep(time.Until(tick.Add(100 * time.Millisecond)))
	err = l.RemoveJob(ctx, job)
	what := fmt.Sprintf("RemoveJob(%s) with the defaults 100 ms after its tick: %v", job, err)
	if !errors.Is(err, runonce.ErrJobActive) && !errors.Is(err, runonce.ErrLockHeld) {
		return what, fmt.Errorf("RemoveJob of a job the fleet schedules: %v, want ErrJobActive or ErrLockHeld", err)
	}
	return what, nil
}

// killedSet returns the instances killed.
func (f *faulted) killedSet() map[*instance]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.killed)
}

// cutClaims returns the keys of lost (ticks observed as already_ran that
// ran nowhere) that no fault explains: a claim cut between its write and
// its run, by a kill or a stop in that tick (or the next: a write landing
// after the stop), or by a failure of its own (observed as failed: a
// write whose outcome is unknown, or answered too late). The rule counts
// such a write as the tick's run (a tick lost, never run twice), and the
// other instances cannot tell it from a run.
func (f *faulted) cutClaims(lost []fleet.Key, obs []fleet.Obs) []fleet.Key {
	failed := map[fleet.Key]bool{}
	for _, o := range obs {
		if o.Outcome == "failed" {
			failed[fleet.Key{Job: o.Job, Tick: o.Tick}] = true
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fleet.Key
	for _, k := range lost {
		if !failed[k] && !slices.ContainsFunc(f.cuts, func(c int64) bool { return k.Tick == c || k.Tick == c+1 }) {
			out = append(out, k)
		}
	}
	return out
}

// explain lists what the records say of the first few of keys: the runs
// and the observations of each.
func explain(rs fleet.Records, keys []fleet.Key) string {
	var out []string
	for _, k := range keys[:min(len(keys), 4)] {
		var said []string
		for _, o := range rs.Obs {
			if o.Job == k.Job && o.Tick == k.Tick {
				said = append(said, o.Node+" "+o.Outcome)
			}
		}
		out = append(out, fmt.Sprintf("%s tick %d: %s", k.Job, k.Tick, strings.Join(said, ", ")))
	}
	return fmt.Sprintf("%d, the first: %s", len(keys), strings.Join(out, "; "))
}

// checkLastRuns holds each job's LastRun (runrec's reading of the run
// node, tierlock ls's) to the instance that made its last run recorded.
func (f *faulted) checkLastRuns(t *testing.T, ctx context.Context, servers []string, rs fleet.Records) {
	t.Helper()
	last := map[string]fleet.Run{}
	for _, r := range rs.Runs {
		// The last run is the last to start: a tick an instance whose
		// clock is ahead passed over runs later than a later tick.
		if l, ok := last[r.Job]; !ok || r.At.After(l.At) {
			last[r.Job] = r
		}
	}
	l, err := gocronlock.NewLocker(zktest.Connect(t, servers), f.root)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	wrong := 0
	for _, job := range slices.Sorted(maps.Keys(last)) {
		got, err := l.LastRun(ctx, job)
		if err != nil {
			t.Fatal(err)
		}
		if got.By != last[job].Node {
			wrong++
			t.Errorf("%s: LastRun names %s (at %v), the last run recorded is %s's (tick %d)", job, got.By, got.At, last[job].Node, last[job].Tick)
		}
	}
	t.Logf("LastRun named the instance of the last run recorded for %d of %d jobs", len(last)-wrong, len(last))
}

// count counts the lines of the instances' logs that contain s.
func (f *fleetRun) count(s string) int {
	f.mu.Lock()
	ins := slices.Clone(f.instances)
	f.mu.Unlock()
	n := 0
	for _, in := range ins {
		n += strings.Count(in.logs.String(), s)
	}
	return n
}

// grep returns up to n lines of the instances' logs that contain s, each
// after its instance's name.
func (f *fleetRun) grep(s string, n int) string {
	f.mu.Lock()
	ins := slices.Clone(f.instances)
	f.mu.Unlock()
	var out []string
	for _, in := range ins {
		for _, line := range strings.Split(in.logs.String(), "\n") {
			if strings.Contains(line, s) && len(out) < n {
				out = append(out, in.name+": "+line)
			}
		}
	}
	return strings.Join(out, "\n")
}
