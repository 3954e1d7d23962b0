//go:build tierlocktrace && tierlockmutants

package replay

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/mutant"
	"github.com/tierlock/tierlock/internal/trace"
)

// The seeded bugs of package mutant (docs/replay.md), each in a short
// stress run recorded with its bug on: the replay must refuse the run, at
// the step named here; the control, with no bug, must replay clean.
//
//	go test -count=1 -tags 'tierlocktrace tierlockmutants' -run TestCodeMutants ./internal/replay/

// codeMutants are the bugs with the kind of step the replay refuses and
// a part of its rule (alternatives separated by |: which of its wrong steps
// a run shows first depends on the run).
var codeMutants = []struct {
	name string
	kind trace.Kind
	rule string
}{
	{"", 0, ""},
	{mutant.GrantBeforeListing, trace.Turn, "no listing answered"},
	// Another node's delete queued ahead of our create: the queue's first,
	// another process's or our own whose delete is queued already.
	{mutant.DeleteWrongCreate, trace.DelAdd, "not one of this lock's, or was queued already"},
	{mutant.WatchGrantsEarly, trace.Grant, "no listing found first"},
	// A batch with a create leaves its deletes for the next: the create
	// goes out while its Lock's released node's delete is still queued.
	{mutant.CreateBeforeDelete, trace.Send, "has its delete queued, not in a request on the wire"},
}

// scenarioMutants are the bugs of the lease's bounds and of the steps'
// timing, each in the scenario (scenario_test.go), with the kind of step
// the replay refuses and a part of its rule.
var scenarioMutants = []struct {
	name string
	kind trace.Kind
	rule string
}{
	{"", 0, ""},
	{mutant.ReachLong, trace.Renew, "past the touch it counts from"},
	{mutant.ChainNoGap, trace.Renew, "which no handshake nor chain shows"},
	{mutant.TouchFromAnswer, trace.Renew, "which no handshake nor chain shows"},
	{mutant.LeaseFromProof, trace.Renew, "which no handshake nor chain shows"},
	{mutant.LossLate, trace.Lose, "after the"},
	{mutant.LapseLate, trace.Lapse, "deadline"},
	{mutant.GrantLate, trace.Grant, "after its verdict"},
}

// mutantRun is stress's TestMutant run (2 processes x 4 goroutines on one
// path, 3 s; guarded writes go with -fault only, so -writes=false changes
// nothing here but says so).
var mutantRun = []string{"-impl", "tier", "-procs", "2", "-goroutines", "4", "-paths", "1",
	"-duration", "3s", "-hold", "200us", "-writes=false"}

func TestCodeMutants(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "stress")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// stress is a module of its own (stress/go.mod): built in its directory.
	build := exec.CommandContext(ctx, "go", "build", "-tags", "tierlocktrace tierlockmutants", "-o", bin, ".")
	build.Dir = filepath.Join("..", "..", "stress")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build stress: %v\n%s", err, out)
	}
	t.Run("scenario", func(t *testing.T) {
		for _, m := range scenarioMutants {
			t.Run(caseName(m.name), func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				out := runScenario(t, m.name, dir)
				judge(t, dir, m.name, m.kind, m.rule, lastLine(out))
			})
		}
	})
	// Side by side (go test's -parallel, one per core): one after the
	// other, the five runs took 80 of the test's 122 s. Each is judged by
	// the rules its trace breaks, not by a clock.
	t.Run("stress", func(t *testing.T) {
		for _, m := range codeMutants {
			t.Run(caseName(m.name), func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				cmd := exec.CommandContext(ctx, bin, mutantRun...)
				cmd.Dir = t.TempDir()
				cmd.Env = append(os.Environ(), mutant.Env+"="+m.name, trace.EnvDir+"="+dir)
				out, _ := cmd.CombinedOutput() // a caught bug fails the run's own checks too
				judge(t, dir, m.name, m.kind, m.rule, "stress: "+lastLine(out))
			})
		}
	})
}

// caseName names a subtest after its bug, "control" for the run without.
func caseName(bug string) string {
	if bug == "" {
		return "control"
	}
	return bug
}

// judge replays the run recorded in dir: the control (bug "") must replay
// clean, a bug must be refused at a step of kind whose rule matches rule.
// ran says how the run itself ended.
func judge(t *testing.T, dir, bug string, kind trace.Kind, rule, ran string) {
	t.Helper()
	c := New()
	if err := c.ReplayDir(dir); err != nil {
		t.Fatal(err)
	}
	r := c.Result()
	v := r.First()
	switch {
	case bug == "" && v != nil:
		t.Fatalf("the control refused: %v", v)
	case bug == "":
		t.Logf("control: %d steps, %d holds replayed clean; %s", r.Steps, r.Holds, ran)
	case v == nil:
		t.Fatalf("replayed clean (%d steps, %d holds); %s", r.Steps, r.Holds, ran)
	case v.Step.Kind != kind || !matches(v.Rule, rule):
		t.Fatalf("refused %v, want a %s step refused for %q", v, kind, rule)
	default:
		t.Logf("refused step %d (%s) of process %d: %s; %.120s", v.Step.Seq, strings.TrimSpace(v.Step.Kind.String()+" "+string(v.Step.Op)),
			v.Step.Pid, v.Rule, ran)
	}
}

// lastLine is the last line of out.
func lastLine(out []byte) string {
	last := strings.TrimSpace(string(out))
	if i := strings.LastIndexByte(last, '\n'); i >= 0 {
		last = strings.TrimSpace(last[i+1:])
	}
	return last
}

// matches reports whether rule contains one of alternatives, separated by |.
func matches(rule, alternatives string) bool {
	for _, a := range strings.Split(alternatives, "|") {
		if strings.Contains(rule, a) {
			return true
		}
	}
	return false
}
