package replay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/spincache"
	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/internal/zktest"
)

// The replay checked against model/twotier.pml: the model, built with
// -DEMIT, prints each client step as a trace line as it takes it. Every
// random simulation of the correct model must replay clean, and every
// mutant's counterexample (pan's error trail, replayed by spin -t) must
// be refused, at the step the package doc names for it.

// sims are the correct model's simulation settings: each fault kind
// alone, cancellation, both, more goroutines, three processes, more
// rounds (within the model's 8 nodes: P x G x R <= 6, faults' retries
// making the others).
var sims = []string{
	"-DF=1 -DC=0 -DCUT=0",
	"-DF=1 -DC=0 -DDISC=0",
	"-DF=0 -DC=1",
	"-DF=1 -DC=1",
	"-DG=3 -DF=1 -DC=1",
	"-DP=3 -DG=1 -DR=2 -DF=1 -DC=0",
	"-DG=1 -DR=3 -DF=1 -DC=1",
}

// seeds per setting: enough that every fault's steps show up (the test
// requires them), few enough for the time budget.
const seeds = 40

// spinDir copies twotier.pml into a directory of the test's.
func spinDir(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"spin", "cc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: scripts/install-deps.sh installs it (%v)", tool, err)
		}
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "model", "twotier.pml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "twotier.pml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// commandBound is a hang guard on one spin, cc or pan process: each
// takes a second or less of CPU, but at nice 19 beside a loaded race run
// (make test's background checks) a second of CPU took over a minute of
// the wall clock, so a bound on a whole batch of them (2 minutes for
// TestSpinSimulations' 280) failed a loaded make test (run 114) where no
// process hung.
const commandBound = 5 * time.Minute

// run runs a command in dir and returns its output; ctx, or commandBound
// of the wall clock, ends it.
func run(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, commandBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return out, nil
}

// emitted splits spin's output into the trace lines and the mutants'
// markers (lines "MUTANT ...", printed where a mutant takes its wrong
// step).
func emitted(out []byte) (steps []byte, marks []string) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "{"):
			steps = append(append(steps, line...), '\n')
		case strings.HasPrefix(line, "MUTANT "):
			marks = append(marks, line)
		}
	}
	return steps, marks
}

// replayed replays one emitted trace.
func replayed(t *testing.T, name string, steps []byte) Result {
	t.Helper()
	c := New()
	if err := c.Replay(name, bytes.NewReader(steps)); err != nil {
		t.Fatal(err)
	}
	return c.Result()
}

// TestSpinSimulations: every random simulation of the correct model, with
// faults, replays clean.
func TestSpinSimulations(t *testing.T) {
	src := spinDir(t)
	ctx := t.Context()
	var jobs []func(dir string)
	var mu sync.Mutex
	kinds := map[string]int{}
	steps, states := 0, 0
	for _, d := range sims {
		for seed := 1; seed <= seeds; seed++ {
			jobs = append(jobs, func(dir string) {
				args := append([]string{fmt.Sprintf("-n%d", seed), "-T", "-DEMIT"}, strings.Fields(d)...)
				out, err := simulate(ctx, dir, args)
				if err != nil {
					t.Error(err)
					return
				}
				lines, _ := emitted(out)
				name := fmt.Sprintf("spin -n%d %s", seed, d)
				r := replayed(t, name, lines)
				mu.Lock()
				steps += r.Steps
				states = max(states, r.States)
				countKinds(kinds, lines)
				mu.Unlock()
				if v := r.First(); v != nil {
					t.Errorf("%s: refused: %v", name, v)
				}
			})
		}
	}
	inParallel(t, src, jobs)
	t.Logf("%d simulations, %d steps, up to %d states in one; steps by kind: %v", len(jobs), steps, states, kinds)
	// The faults' steps that random simulation reaches; TestSpinReach
	// takes the ones it seldom does.
	for _, k := range []string{"event StateDisconnected", "event StateHasSession new", "answer conn",
		"send MULTI", "gate_pass", "handoff", "turn wait", "answer nonode"} {
		if kinds[k] == 0 {
			t.Errorf("no %q step in any simulation", k)
		}
	}
}

// inParallel runs jobs two at a time (the machine's cores), each worker
// in a copy of src of its own: spin writes its files in its directory.
func inParallel(t *testing.T, src string, jobs []func(dir string)) {
	t.Helper()
	ch := make(chan func(string))
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		dir := filepath.Join(t.TempDir(), fmt.Sprint(w))
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				j(dir)
			}
		}()
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	zktest.Wait(t, "the workers", &wg)
}

// trail runs pan on the model with defines (EMIT added) until its first
// error, and returns spin's replay of the error trail: the emitted steps
// and the markers.
func trail(ctx context.Context, dir string, defines []string) (steps []byte, marks []string, err error) {
	def := append([]string{"-DEMIT"}, defines...)
	out, _, err := spincache.Output(dir, []string{"twotier.pml"}, append([]string{"trail"}, def...), func() ([]byte, error) {
		if _, err := run(ctx, dir, "spin", append(append([]string{"-a"}, def...), "twotier.pml")...); err != nil {
			return nil, err
		}
		if _, err := run(ctx, dir, "cc", "-O0", "-w", "-DSAFETY", "-DNOCLAIM", "-o", "pan", "pan.c"); err != nil {
			return nil, err
		}
		out, _ := run(ctx, dir, "./pan", "-m1000000", "-w22") // exits 0 either way
		if !bytes.Contains(out, []byte("assertion violated")) {
			return nil, fmt.Errorf("pan %v found no error:\n%s", defines, out)
		}
		return run(ctx, dir, "spin", append(append([]string{"-t", "-T"}, def...), "twotier.pml")...)
	})
	if err != nil {
		return nil, nil, err
	}
	steps, marks = emitted(out)
	return steps, marks, nil
}

// simulate runs a random simulation of twotier.pml with args, or reads
// back an earlier run's output: spin's simulations and trails are
// functions of the model, the arguments and the tools alone (spincache).
func simulate(ctx context.Context, dir string, args []string) ([]byte, error) {
	out, _, err := spincache.Output(dir, []string{"twotier.pml"}, args, func() ([]byte, error) {
		return run(ctx, dir, "spin", slices.Concat(args, []string{"twotier.pml"})...)
	})
	return out, err
}

// reaches are the steps TestSpinReach leads the correct model to (the
// REACH points in twotier.pml), with the run that reaches each.
var reaches = []struct {
	name    string
	defines []string
}{
	{"lose after a disconnection", []string{"-DREACH=1", "-DF=1", "-DC=0", "-DCUT=0"}},
	{"lose after a lapse while cut", []string{"-DREACH=1", "-DF=1", "-DC=0", "-DDISC=0"}},
	{"a guaranteed delete retried", []string{"-DREACH=2", "-DF=1", "-DC=0", "-DCUT=0"}},
	{"grantGone", []string{"-DREACH=3", "-DF=1", "-DC=0", "-DCUT=0"}},
	{"protection mode finds our node", []string{"-DREACH=4", "-DF=1", "-DC=0", "-DCUT=0"}},
	{"a multi whose released node is gone", []string{"-DREACH=5", "-DF=1", "-DC=0", "-DCUT=0"}},
}

// TestSpinReach: the correct model's paths to the steps random simulation
// seldom takes (a loss told, a retried delete, grantGone, protection mode
// finding our node, a NONODE multi) replay clean.
func TestSpinReach(t *testing.T) {
	src := spinDir(t)
	ctx := t.Context()
	var jobs []func(string)
	for _, r := range reaches {
		jobs = append(jobs, func(dir string) {
			steps, _, err := trail(ctx, dir, r.defines)
			if err != nil {
				t.Error(err)
				return
			}
			res := replayed(t, r.name, steps)
			if v := res.First(); v != nil {
				t.Errorf("%s: refused: %v", r.name, v)
			}
			t.Logf("%s: %d steps replayed clean", r.name, res.Steps)
		})
	}
	inParallel(t, src, jobs)
}

// countKinds counts the steps of lines by what the fault checks look for.
func countKinds(kinds map[string]int, lines []byte) {
	var sid [4]int64
	for _, l := range bytes.Split(lines, []byte("\n")) {
		var st trace.Step
		if len(l) == 0 || json.Unmarshal(l, &st) != nil || st.Proc >= len(sid) {
			continue
		}
		kinds[label(st, sid[st.Proc])]++
		sid[st.Proc] = st.Sid
	}
}

// label names a step for countKinds; sid is its process's session at the
// step before.
func label(st trace.Step, sid int64) string {
	k := st.Kind.String()
	switch {
	case st.Kind == trace.Event && strings.HasSuffix(st.Note, "StateHasSession") && sid != st.Sid:
		return k + " StateHasSession new"
	case st.Kind == trace.Event:
		return k + " " + st.Note[strings.LastIndex(st.Note, " ")+1:]
	case (st.Kind == trace.Send || st.Kind == trace.Answer) && st.Out != "":
		return k + " " + st.Out
	case st.Kind == trace.Send || st.Kind == trace.Answer:
		if st.Retry {
			return k + " " + string(st.Op) + " retry"
		}
		return k + " " + string(st.Op)
	case st.Kind == trace.Turn, st.Kind == trace.Grant && st.Path == "":
		return k + " " + st.Note
	}
	return k
}
