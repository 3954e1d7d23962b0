package fleet

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/child"
	"github.com/tierlock/tierlock/internal/redisserver"
	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/internal/zktest"
)

// The fleet test's length and locks: the default keeps `make test` short;
// the figures in docs are
// `go test -count=1 -v -run TestFleet -fleet.duration 2m ./internal/fleet/`.
var (
	fleetDuration = flag.Duration("fleet.duration", 20*time.Second, "how long each fleet schedules")
	fleetLocks    = flag.String("fleet.locks", "", "the locks to run a fleet of, comma-separated (default: every registered one)")
)

// The fleet of issue 45: 3 processes whose timers are 0, 150 and 300 ms
// apart, runs of 1 to 50 ms, ten jobs on each of three specs.
var fleetOffsets = []time.Duration{0, 150 * time.Millisecond, 300 * time.Millisecond}

var fleetSpecs = []struct{ prefix, spec string }{
	{"every1s", "@every 1s"},
	{"every500ms", "@every 500ms"}, // robfig/cron v3 ticks it every second (TestEverySubSecond)
	{"sec2", "*/2 * * * * *"},      // a seconds field, as cron.WithSeconds() parses it
}

const jobsPerSpec = 10

// fleetLead is the time from the launch to the fleet's common start: the
// workers' start-up (a race-enabled binary, a connection) fits in it.
const fleetLead = 3 * time.Second

func fleetJobs() []Job {
	var jobs []Job
	for _, s := range fleetSpecs {
		for i := range jobsPerSpec {
			jobs = append(jobs, Job{Name: fmt.Sprintf("%s-%02d", s.prefix, i), Spec: s.spec})
		}
	}
	return jobs
}

// TestFleet runs, for every registered lock, the fleet of issue 45 with
// real robfig/cron schedulers in three processes, counts the runs of every
// (job, tick), and holds the fleet to what the lock's registration
// expects: every tick once (OncePerTick), every tick on every instance
// (the control), or most ticks more than once (a lock held while the job
// runs and no longer: the Redis wrappers robfig/cron users write today).
// The first and the last tick of each job are not counted.
func TestFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("fleet test: -short")
	}
	names := Variants()
	if *fleetLocks != "" {
		names = strings.Split(*fleetLocks, ",")
	}
	d := *fleetDuration
	// Short fleets run side by side, all started before the first is
	// waited for (make test's time: one fleet's, whatever -parallel is);
	// full length ones one at a time, for their figures.
	sideBySide := d < 30*time.Second
	started := map[string]*fleetRun{}
	for _, name := range names {
		v, ok := Lookup(name)
		if !ok {
			t.Fatalf("-fleet.locks: %q is not registered (registered: %v)", name, Variants())
		}
		if sideBySide {
			started[name] = startFleet(t, name, backend(t, v.Backend), d, nil)
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			v, _ := Lookup(name)
			f := started[name]
			if f == nil {
				f = startFleet(t, name, backend(t, v.Backend), d, nil)
			}
			rs := f.wait(t, fleetLead+d+time.Minute)
			rep, err := Check(f.jobs, rs, f.start, f.start.Add(d))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s fleet, %v, 3 processes, timers %v apart, runs of 1-50 ms, %d jobs: %v", name, d, fleetOffsets, len(f.jobs), rep)
			judge(t, v.Expect, rep, f.said(rs, rep))
		})
	}
}

// judge holds rep to expect: it fails t with each of judgeFaults's.
func judge(t *testing.T, expect Expect, rep Report, said fleetSaid) {
	t.Helper()
	faults, note := judgeFaults(expect, rep, said)
	for _, f := range faults {
		t.Error(f)
	}
	if note != "" {
		t.Log(note)
	}
}

// judgeFaults returns what rep does wrong for expect, and a note for the
// log. A fleet's coverage depends on its share of the processor and the
// disk: make test runs the fleets under -race, side by side with each
// other, with gocronlock's, the replay, the nemesis and a busy core, and
// ZooKeeper's writes wait on the others' fsyncs (loaded make test run
// 105: fire to run p50 125 ms, 19 of 440 ticks ran nowhere; beside three
// loops of fsynced writes, p50 250-330 ms, 4 and 14). What holds on any
// machine is the instances' word, tick by tick: each tick that ran
// nowhere is observed as lost (held or failed, not unknown) by an
// instance; lost without it, it is a fault. No tick runs twice, whatever
// the load.
func judgeFaults(expect Expect, rep Report, said fleetSaid) (faults []string, note string) {
	switch expect {
	case OncePerTick:
		if rep.Repeated() > 0 {
			faults = append(faults, fmt.Sprintf("%d ticks ran more than once, the first: %v", rep.Repeated(), rep.Repeats))
		}
		switch {
		case rep.Coverage() >= MinCoverage:
		case len(said.lost.Untold) == 0:
			note = fmt.Sprintf("%.2f%% of the ticks ran, under %.1f%%: an instance told each tick that ran nowhere lost: %v; the first: %s\nthe instances' warnings: %s",
				100*rep.Coverage(), 100*MinCoverage, said.lost, said.first, said.warnings)
		default:
			faults = append(faults, fmt.Sprintf("%.2f%% of the ticks ran, want at least %.1f%% or each tick that ran nowhere told lost (held or failed) by an instance; %d were not, e.g. %v; the ticks that ran nowhere: %v; the first: %s\nthe instances' warnings: %s",
				100*rep.Coverage(), 100*MinCoverage, len(said.lost.Untold), said.lost.Untold[:min(5, len(said.lost.Untold))], said.lost, said.first, said.warnings))
		}
	case EveryInstance:
		// The check's own check: without a lock every instance runs every
		// tick, and the checker must count it.
		if rep.More < rep.Ticks*99/100 {
			faults = append(faults, fmt.Sprintf("%d of %d ticks ran on all %d instances, want at least 99%%", rep.More, rep.Ticks, len(fleetOffsets)))
		}
	case Repeats:
		if rep.Repeated() <= rep.Ticks/2 {
			faults = append(faults, fmt.Sprintf("%d of %d ticks ran more than once: the lock no longer shows the failure it is measured for", rep.Repeated(), rep.Ticks))
		}
	default:
		faults = append(faults, fmt.Sprintf("expectation %d unknown", expect))
	}
	return faults, note
}

// TestJudgeRefuses seeds the robfig fleet's judge: a tick run twice by an
// overloaded fleet, a tick that ran nowhere told only unknown (it passed
// before, the fleet having said "overloaded": unknown counted as told),
// and one told by no instance fail it; one told held passes.
func TestJudgeRefuses(t *testing.T) {
	k := Key{Job: "job-00", Tick: time.Date(2026, 11, 29, 0, 0, 1, 0, time.UTC)}
	overloaded := `1 × "WARN overloaded"`
	lostRep := Report{Counts: Counts{Ticks: 100, Once: 99, Missed: 1}, Lost: []Key{k}}
	for _, tc := range []struct {
		name string
		rep  Report
		obs  []Obs
		want string
	}{
		{"a tick run twice, overloaded", Report{Counts: Counts{Ticks: 100, Once: 99, Twice: 1}, Repeats: []Key{k}}, nil, "ran more than once"},
		{"a tick lost, told unknown", lostRep, []Obs{{Job: k.Job, Tick: k.Tick, Outcome: "unknown"}}, "told lost"},
		{"a tick lost, told by none", lostRep, nil, "told lost"},
		{"a tick lost, told held", lostRep, []Obs{{Job: k.Job, Tick: k.Tick, Outcome: "held"}}, ""},
	} {
		said := fleetSaid{lost: TellsLost(tc.rep, tc.obs), warnings: overloaded}
		faults, _ := judgeFaults(OncePerTick, tc.rep, said)
		got := strings.Join(faults, "; ")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: faults %q, want %q", tc.name, got, tc.want)
		}
	}
}

// fleetSaid is what a fleet's instances said: of the ticks that ran
// nowhere (their observers' outcomes, the first few explained), and their
// warnings.
type fleetSaid struct {
	lost     Told
	first    string
	warnings string
}

func (f *fleetRun) said(rs Records, rep Report) fleetSaid {
	return fleetSaid{lost: TellsLost(rep, rs.Obs), first: explain(rs, rep.Lost), warnings: f.warnings()}
}

// backend starts the server b names for one fleet, stopped when the test
// ends, and returns its address; ZooKeeper is the one of
// TIERLOCK_ZK_SERVERS when that is set.
func backend(t *testing.T, b Backend) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	switch b {
	case NoServer:
		return nil
	case Redis:
		r, err := redisserver.Start(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		return []string{r.Addr}
	case ZooKeeper:
		if c, ok := zkserver.FromEnv(); ok {
			return c.Addrs()
		}
		c, err := zkserver.Start(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c.Addrs()
	}
	t.Fatalf("backend %d unknown", b)
	return nil
}

// fleetRun is a fleet's workers and the records they write, gathered as
// they come.
type fleetRun struct {
	start   time.Time
	jobs    []Job
	procs   map[string]*child.Proc
	args    map[string][]string           // each worker's flags
	logs    map[string]*zktest.SyncBuffer // each worker's stderr, its log
	gone    map[string][]*child.Proc      // workers killed and started again
	killed  map[*child.Proc]bool          // workers killed by the test
	cuts    []time.Time                   // the ticks a kill or a stop cut an instance after (faults_scene_test.go)
	target  string                        // the instance the faults hit ("": node-0)
	clock   time.Duration                 // its clock's offset from the others' (-clock)
	mu      sync.Mutex
	records Records
	readers sync.WaitGroup
}

// startFleet starts one worker per offset, with the lock name on servers,
// scheduling from a common start fleetLead ahead for d, the fleet's jobs
// (fleetJobs but for jobs) and extra flags for each: "node-1:-clock=2s"
// is node-1's alone.
func startFleet(t *testing.T, name string, servers []string, d time.Duration, jobs []Job, extra ...string) *fleetRun {
	t.Helper()
	if jobs == nil {
		jobs = fleetJobs()
	}
	f := &fleetRun{start: time.Now().Truncate(time.Second).Add(fleetLead), jobs: jobs, procs: map[string]*child.Proc{},
		args: map[string][]string{}, logs: map[string]*zktest.SyncBuffer{}, gone: map[string][]*child.Proc{},
		killed: map[*child.Proc]bool{}}
	root := fmt.Sprintf("/cronlock-fleet/%d-%d-%s", os.Getpid(), time.Now().UnixNano(), name)
	for i, off := range fleetOffsets {
		instance := fmt.Sprintf("node-%d", i)
		args := []string{"-lock", name, "-servers", strings.Join(servers, ","), "-root", root, "-name", instance,
			"-offset", off.String(), "-start", fmt.Sprint(f.start.UnixMilli()), "-duration", d.String()}
		for _, j := range f.jobs {
			args = append(args, "-job", j.Name+"="+j.Spec)
		}
		for _, e := range extra {
			if node, flag, ok := strings.Cut(e, ":"); ok && strings.HasPrefix(node, "node-") {
				if node == instance {
					args = append(args, flag)
				}
				continue
			}
			args = append(args, e)
		}
		f.args[instance] = args
		f.logs[instance] = &zktest.SyncBuffer{}
		f.launch(t, instance)
	}
	return f
}

// launch starts instance's worker, or starts it again.
func (f *fleetRun) launch(t *testing.T, instance string) {
	t.Helper()
	p, err := child.Start(child.Spec{Role: workerRole, Task: f.args[instance], Args: []string{"-test.run=^$"}, Stderr: f.logs[instance]})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	f.mu.Lock()
	if old := f.procs[instance]; old != nil {
		f.gone[instance] = append(f.gone[instance], old)
	}
	f.procs[instance] = p
	f.mu.Unlock()
	f.readers.Go(func() { f.read(t, instance, p) })
}

// kill kills instance's worker, to be started again.
func (f *fleetRun) kill(instance string) {
	p := f.proc(instance)
	f.mu.Lock()
	f.killed[p] = true
	f.mu.Unlock()
	p.Kill()
}

// wasKilled reports whether the test killed p.
func (f *fleetRun) wasKilled(p *child.Proc) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.killed[p]
}

// proc returns instance's worker now.
func (f *fleetRun) proc(instance string) *child.Proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.procs[instance]
}

// read gathers a worker's records until it exits.
func (f *fleetRun) read(t *testing.T, instance string, p *child.Proc) {
	for line := range p.Lines() {
		f.mu.Lock()
		err := f.records.Parse(strings.NewReader(string(line)))
		f.mu.Unlock()
		if err != nil {
			t.Errorf("%s: %v", instance, err)
		}
	}
}

// wait waits for every worker to end, reports those that failed (but the
// ones killed) or started their scheduler after the fleet's start (but the
// ones started again), and returns the records.
func (f *fleetRun) wait(t *testing.T, limit time.Duration) Records {
	t.Helper()
	deadline := time.After(limit)
	for _, instance := range slices.Sorted(maps.Keys(f.procs)) {
		for p := f.proc(instance); ; p = f.proc(instance) {
			select {
			case <-p.Exited():
			case <-deadline:
				t.Fatalf("%s still runs after %v", instance, limit)
			}
			if f.wasKilled(p) {
				// Killed by the test, to be started again: wait for the
				// new one.
				for f.proc(instance) == p {
					select {
					case <-deadline:
						t.Fatalf("%s not started again after %v", instance, limit)
					case <-time.After(100 * time.Millisecond):
					}
				}
				continue
			}
			if p.Err() != nil {
				t.Errorf("%s", p.Describe(instance))
			}
			break
		}
	}
	zktest.Wait(t, "the instances' output readers", &f.readers)
	for instance := range f.procs {
		if ready, ok := f.records.Ready[instance]; !ok || (ready.After(f.start) && len(f.gone[instance]) == 0) {
			t.Errorf("%s's scheduler started at %v, after the fleet's start %v: make fleetLead longer", instance, ready, f.start)
		}
	}
	return f.records
}
