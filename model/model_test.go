// Package model runs the spin models of tierlock's protocol (admission.pml,
// twotier.pml, rwlock.pml, writes.pml) and their mutants; see README.md in
// this directory.
package model

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/spincache"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// check is one spin verification run: spin -a with defines, cc with
// ccFlags, ./pan with panFlags.
type check struct {
	name     string
	model    string   // .pml file in this directory
	defines  []string // spin -D flags: model size and mutant
	ccFlags  []string // what pan checks: -DSAFETY, -DNFAIR, -DCOLLAPSE; -O0 (quick)
	panFlags []string // -a -f for liveness, -m depth, -w hash size
	mutant   bool     // must report errors
	// violates, for a mutant, is what pan must report violated (a
	// substring of its "assertion violated" line): the failure the mutant
	// is meant to show, not some other.
	violates string
	// mustReach lists statements (substrings of them as pan prints them)
	// that must not be reported unreached: the properties this run is
	// meant to check, and the steps it is meant to take.
	mustReach []string
}

var (
	safety = []string{"-DSAFETY", "-DNOCLAIM"} // assertions and invalid end states, no LTL claim
	// weak fairness for the acceptance-cycle search; NFAIR sizes its
	// copies of the state space (one per process plus two).
	liveness = []string{"-DNFAIR=3"}
	// quick: pan.c compiled without optimisation (cc takes the last -O).
	// Compiling it with -O2 takes 4-11 s of CPU, which only a search of
	// millions of states (twotier's fault runs) or a long liveness search
	// earns back; a mutant's search stops at its first error.
	quick       = "-O0"
	quickSafety = append([]string{quick}, safety...)
)

var checks = []check{
	// Model 2, two tiers and the lease: 2 processes x 2 goroutines, one
	// acquisition each, one hand-off per node. One fault in each run (process
	// 0's: the processes are alike), a disconnection or process 0's server
	// cut from the leader, with what follows (the lease's lapse, the leader's
	// expiry, reconnection in the same session or a new one; for the cut,
	// reads answered from the server's frozen view, the heal or the server
	// dropping its clients), and failed writes and lost watch events;
	// cancelled waits in a run of their own: together they do not fit the
	// time budget. COLLAPSE keeps each fault run's memory under 1 GB.
	{name: "twotier/disconnect", model: "twotier.pml", defines: []string{"-DF=1", "-DC=0", "-DCUT=0"},
		ccFlags: append([]string{"-DCOLLAPSE"}, safety...), panFlags: []string{"-m1000000", "-w25"},
		mustReach: []string{"nvalid==0", "lasttok", "assert(!((valid[", "sid[p] = (1-sid[p])"}},
	{name: "twotier/cut", model: "twotier.pml", defines: []string{"-DF=1", "-DC=0", "-DDISC=0"},
		ccFlags: append([]string{"-DCOLLAPSE"}, safety...), panFlags: []string{"-m1000000", "-w25"},
		mustReach: []string{"nvalid==0", "lasttok", "assert(!((valid[", "sid[p] = (1-sid[p])", "cview"}},
	{name: "twotier/cancel", model: "twotier.pml", defines: []string{"-DF=0", "-DC=1"},
		ccFlags: append([]string{quick, "-DCOLLAPSE"}, safety...), panFlags: []string{"-m1000000", "-w22"},
		mustReach: []string{"nvalid==0", "lasttok"}},
	{name: "twotier/mutant_forget_failed_delete", model: "twotier.pml",
		defines: []string{"-DF=1", "-DC=0", "-DCUT=0", "-DMUTANT_FORGET_FAILED_DELETE"},
		ccFlags: quickSafety, panFlags: []string{"-m1000000", "-w22"}, mutant: true, violates: "assertion violated 0"},
	{name: "twotier/mutant_no_loss_signal", model: "twotier.pml",
		defines: []string{"-DF=1", "-DC=0", "-DMUTANT_NO_LOSS_SIGNAL"},
		ccFlags: quickSafety, panFlags: []string{"-m1000000", "-w22"}, mutant: true, violates: "!((valid["},
	// The lease's mutants, with the cut (a disconnection cannot show them)
	// and without the fencing assertion, which depth-first search meets a
	// step earlier (the stale holder granted just after the other released):
	// the trail shows two valid holders.
	{name: "twotier/mutant_read_renews", model: "twotier.pml",
		defines: []string{"-DF=1", "-DC=0", "-DDISC=0", "-DNOFENCE", "-DMUTANT_READ_RENEWS"},
		ccFlags: quickSafety, panFlags: []string{"-m1000000", "-w22"}, mutant: true, violates: "(nvalid==0)"},
	{name: "twotier/mutant_renew_after_expiry", model: "twotier.pml",
		defines: []string{"-DF=1", "-DC=0", "-DDISC=0", "-DNOFENCE", "-DMUTANT_RENEW_AFTER_EXPIRY"},
		ccFlags: quickSafety, panFlags: []string{"-m1000000", "-w22"}, mutant: true, violates: "(nvalid==0)"},
	// The node's owner read once the create returned, however late (the
	// code before TestPauseBetweenCreateAndOwner's fix).
	{name: "twotier/mutant_owner_after_reply", model: "twotier.pml",
		defines: []string{"-DF=1", "-DC=0", "-DCUT=0", "-DNOFENCE", "-DOWNER_AFTER_REPLY"},
		ccFlags: quickSafety, panFlags: []string{"-m1000000", "-w22"}, mutant: true, violates: "(nvalid==0)"},

	// Model 3, the read/write lock's and the semaphore's queue rules
	// (rwlock.pml): 2 processes x 2 episodes of reads, writes and
	// downgrades; 3 processes sharing 2 leases.
	{name: "rwlock/rw", model: "rwlock.pml", defines: []string{"-DRW=1"}, ccFlags: quickSafety, panFlags: []string{"-m100000"}},
	{name: "rwlock/mutant_later_writer", model: "rwlock.pml", defines: []string{"-DRW=1", "-DMUTANT_LATER_WRITER"},
		ccFlags: quickSafety, panFlags: []string{"-m100000"}, mutant: true},
	{name: "rwlock/mutant_621", model: "rwlock.pml", defines: []string{"-DRW=1", "-DMUTANT_621"},
		ccFlags: quickSafety, panFlags: []string{"-m100000"}, mutant: true},
	{name: "rwlock/semaphore", model: "rwlock.pml", defines: []string{"-DRW=0"}, ccFlags: quickSafety, panFlags: []string{"-m100000"},
		mustReach: []string{"holders<=2"}},
	{name: "rwlock/mutant_count", model: "rwlock.pml", defines: []string{"-DRW=0", "-DMUTANT_COUNT"},
		ccFlags: quickSafety, panFlags: []string{"-m100000"}, mutant: true},

	// Model 4, tier 1's admission queue (admission.pml, tier/admit.go):
	// 3 goroutines of weights 1, 2 and 1 on 2 units, the fast path with
	// its 4 spins, tryAcquire, release and handOff, contexts that end at
	// any point. The FIFO assertions must be reached on every path that
	// takes units without queueing.
	{name: "admission/safety", model: "admission.pml", ccFlags: quickSafety, panFlags: []string{"-m1000000"},
		mustReach: []string{"nwaiting==0"}},
	{name: "admission/liveness", model: "admission.pml", ccFlags: liveness, panFlags: []string{"-a", "-f", "-m1000000"}},
	{name: "admission/mutant_no_undo", model: "admission.pml", defines: []string{"-DMUTANT_NO_UNDO"},
		ccFlags: quickSafety, panFlags: []string{"-m1000000"}, mutant: true},
	// The same mutant with assertions off (-A): the lost units starve the
	// waiters, which the liveness claim sees on its own.
	{name: "admission/mutant_no_undo_liveness", model: "admission.pml", defines: []string{"-DMUTANT_NO_UNDO"},
		ccFlags: append([]string{quick}, liveness...), panFlags: []string{"-a", "-f", "-A", "-m1000000"}, mutant: true},
	{name: "admission/mutant_no_notify", model: "admission.pml", defines: []string{"-DMUTANT_NO_NOTIFY"},
		ccFlags: quickSafety, panFlags: []string{"-m1000000"}, mutant: true},
	{name: "admission/mutant_fast_ignores_queue", model: "admission.pml", defines: []string{"-DMUTANT_FAST_IGNORES_QUEUE"},
		ccFlags: quickSafety, panFlags: []string{"-m1000000"}, mutant: true},

	// Model 5, the session's write path (writes.pml; zklock/internal/writes):
	// two locks on two paths looping release -> acquire (admission under a
	// bound of 4 places shared with a reader, the create queued, withdrawn
	// if ctx ends while it is queued; guarded transactions), the writer
	// (batches of whole writes from the head, at most 3 ops, one in flight;
	// a queue of deletes lingers until its timer; a refused batch's other
	// writes go again together, and apart, one per path, once refused
	// twice), the server (a batch applied op by op, or refused whole at its
	// first failing op: a released node deleted by an operator, a removed
	// parent, a stale check), answers in order as late as the environment
	// likes. Safety: (a) one node per path, (b) a write fails only for its
	// own op, (d) no stranded write, no invalid end state; liveness (c):
	// every released node deleted, every queued write answered. Two faults
	// a run, so that a write can be refused twice and go apart.
	{name: "writes/safety", model: "writes.pml", defines: []string{"-DF=2"}, ccFlags: quickSafety, panFlags: []string{"-m1000000"},
		mustReach: []string{"nodes[l]<=1", "0||(w==refop)", "nc = (nc+1)", "parent[me] = 1", "armed = 0",
			"cover: a batch bounded", "cover: two paths' creates", "cover: a create with the other path's delete",
			"cover: a create refused", "cover: a delete refused", "cover: a transaction refused",
			"cover: a create put back", "cover: a transaction put back", "cover: a delete put back",
			"cover: foldWait over", "cover: writes sent apart", "cover: a second write of a path kept"}},
	// Writes apart after one refusal (APART=1), so that two of them race
	// with one fault: the requests apart applied in either order.
	{name: "writes/apart", model: "writes.pml", defines: []string{"-DAPART=1"}, ccFlags: quickSafety, panFlags: []string{"-m1000000"},
		mustReach: []string{"nodes[l]<=1", "cover: writes sent apart", "cover: apart, in the other order"}},
	// The liveness search visits 12 M states: pan.c compiled with -O2.
	// With APART=1, so that the writes apart are in it at one fault.
	{name: "writes/liveness", model: "writes.pml", defines: []string{"-DAPART=1"}, ccFlags: liveness, panFlags: []string{"-a", "-f", "-m1000000"}},
	// The code's seeded bug create-before-delete (takeLocked/createsAhead):
	// a create applied while its path's released node is there.
	{name: "writes/mutant_create_before_delete", model: "writes.pml", defines: []string{"-DMUTANT_CREATE_BEFORE_DELETE"},
		ccFlags: quickSafety, panFlags: []string{"-m1000000"}, mutant: true, violates: "nodes[l]<=1"},
	// takeApartLocked taking a second write of one path: the writes sent
	// apart race, and a create overtakes its path's delete.
	{name: "writes/mutant_apart_any_path", model: "writes.pml", defines: []string{"-DF=2", "-DMUTANT_APART_ANY_PATH"},
		ccFlags: quickSafety, panFlags: []string{"-m1000000"}, mutant: true, violates: "nodes[l]<=1"},
	// failOne failing every write of a refused batch: a create fails
	// although its op did not.
	{name: "writes/mutant_fail_whole_batch", model: "writes.pml", defines: []string{"-DMUTANT_FAIL_WHOLE_BATCH"},
		ccFlags: quickSafety, panFlags: []string{"-m1000000"}, mutant: true, violates: "w==refop"},
	// run returning on a nil batch without startLocked: a delete queued
	// while a batch was out lingers with no timer armed. The monitor (d)
	// sees the stranded queue...
	{name: "writes/mutant_no_rearm", model: "writes.pml", defines: []string{"-DMUTANT_NO_REARM"},
		ccFlags: quickSafety, panFlags: []string{"-m1000000"}, mutant: true, violates: "!(wactive)"},
	// ...and, with assertions off (-A), so that an acceptance cycle is the
	// only error pan can report, the liveness claim (c): the released node
	// is never deleted.
	{name: "writes/mutant_no_rearm_liveness", model: "writes.pml", defines: []string{"-DMUTANT_NO_REARM"},
		ccFlags: append([]string{quick}, liveness...), panFlags: []string{"-a", "-f", "-A", "-m1000000"}, mutant: true},
	// run as the code at 9aebee3 (writer.go) has it: `_ =
	// q.startLocked(false)` ignores the answer; when foldWait ends between takeLocked's and startLocked's
	// reads of the clock, running is set and no goroutine runs, and every
	// later write is stranded: (d), and (c) with -A.
	{name: "writes/stranded", model: "writes.pml", defines: []string{"-DSTRANDED"},
		ccFlags: quickSafety, panFlags: []string{"-m1000000"}, mutant: true, violates: "!(wactive)"},
	{name: "writes/stranded_liveness", model: "writes.pml", defines: []string{"-DSTRANDED"},
		ccFlags: append([]string{quick}, liveness...), panFlags: []string{"-a", "-f", "-A", "-m1000000"}, mutant: true},
}

func TestModels(t *testing.T) {
	tools := map[string]string{}
	for _, tool := range []string{"spin", "cc"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s not found (%v): run scripts/install-deps.sh, which installs spin and a C compiler", tool, err)
		}
		tools[tool] = p
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res := c.run(t, tools)
			t.Logf("spin %s %s; cc %s; pan %s: %d states stored, depth %d, %.2fs (pan), errors %d",
				strings.Join(c.defines, " "), c.model, strings.Join(c.ccFlags, " "),
				strings.Join(c.panFlags, " "), res.states, res.depth, res.seconds, res.errors)
			if c.mutant {
				if res.errors == 0 {
					t.Errorf("mutant verified clean: the model cannot see this bug\n%s", res.out)
				} else if c.violates != "" && !strings.Contains(res.violated, c.violates) {
					t.Errorf("mutant fails, but not on %s: %q\n%s", c.violates, res.violated, res.out)
				}
				return
			}
			if res.errors != 0 {
				t.Errorf("%d errors; replay the trail with spin -t -p %s %s\n%s",
					res.errors, strings.Join(c.defines, " "), c.model, res.out)
			}
			if res.truncated {
				t.Errorf("search truncated (depth limit): raise -m\n%s", res.out)
			}
			for _, a := range c.mustReach {
				if u := res.unreachedStatement(a); u != "" {
					t.Errorf("never reached, so never checked: %s", u)
				}
			}
		})
	}
}

type result struct {
	out       string
	errors    int
	states    int64
	depth     int64
	seconds   float64
	truncated bool
	violated  string   // pan's "assertion violated" line, if any
	unreached []string // statements pan reports unreached
}

func (r result) unreachedStatement(substr string) string {
	for _, u := range r.unreached {
		if strings.Contains(u, substr) {
			return u
		}
	}
	return ""
}

var (
	reErrors  = regexp.MustCompile(`errors: (\d+)`)
	reStates  = regexp.MustCompile(`(\d+(?:\.\d+)?(?:e\+\d+)?) states, stored`)
	reDepth   = regexp.MustCompile(`depth reached (\d+)`)
	reElapsed = regexp.MustCompile(`elapsed time ([\d.e+-]+) seconds`)
)

// run generates, compiles and runs the verifier in a temporary directory.
func (c check) run(t *testing.T, tools map[string]string) result {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile(c.model)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, c.model), src, 0o644); err != nil {
		t.Fatal(err)
	}
	// A hang's limit, not a speed's: make test runs the searches at nice
	// 19 beside a busy core, where they get what the other tests leave.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	sh := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !(name == "./pan" && errors.As(err, &exit)) {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	spinArgs := append(append([]string{}, c.defines...), "-a", c.model)
	// -w: pan.c's many generated warnings say nothing about the model.
	// -O2 unless ccFlags ask for less: cc takes the last -O.
	ccArgs := append(append([]string{"-O2", "-w"}, c.ccFlags...), "-o", "pan", "pan.c")
	// pan's output is a function of the model, these arguments and the
	// tools alone: read back when an earlier run left it (spincache).
	args := append(append(append(append(spinArgs, "\x00cc"), ccArgs...), "\x00pan"), c.panFlags...)
	b, cached, err := spincache.Output(dir, []string{c.model}, args, func() ([]byte, error) {
		sh(tools["spin"], spinArgs...)
		sh(tools["cc"], ccArgs...)
		return []byte(sh("./pan", c.panFlags...)), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cached {
		t.Logf("pan's output of an earlier run of the same model, arguments and tools (%s)", spincache.Dir())
	}
	r, ok := parse(string(b))
	if !ok {
		t.Fatalf("no error count in pan's output:\n%s", b)
	}
	return r
}

// parse reads pan's output; false when it holds no error count.
func parse(out string) (result, bool) {
	r := result{out: out, truncated: strings.Contains(out, "max search depth too small")}
	m := reErrors.FindStringSubmatch(out)
	if m == nil {
		return r, false
	}
	r.errors, _ = strconv.Atoi(m[1])
	if m := reStates.FindStringSubmatch(out); m != nil {
		f, _ := strconv.ParseFloat(m[1], 64)
		r.states = int64(f)
	}
	if m := reDepth.FindStringSubmatch(out); m != nil {
		r.depth, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if m := reElapsed.FindStringSubmatch(out); m != nil {
		r.seconds, _ = strconv.ParseFloat(m[1], 64)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "assertion violated") {
			r.violated = strings.TrimSpace(line)
			break
		}
	}
	inUnreached := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "unreached in"):
			inUnreached = true
		case inUnreached && strings.HasPrefix(line, "\t"):
			r.unreached = append(r.unreached, strings.TrimSpace(line))
		default:
			inUnreached = false
		}
	}
	return r, true
}
