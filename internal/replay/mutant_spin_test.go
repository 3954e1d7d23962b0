package replay

import (
	"fmt"
	"strings"
	"testing"
)

// spinMutants are twotier.pml's mutants that change the client's steps,
// the runs that find them (model_test.go's), and what the replay must say
// of their counterexamples: the rule its refusal names, or "" where the
// replay cannot see the wrong step (see the package doc).
var spinMutants = []struct {
	name    string
	defines []string
	refuses string // a substring of the rule of the first refused step
}{
	{"MUTANT_NO_LOSS_SIGNAL", []string{"-DF=1", "-DC=0", "-DMUTANT_NO_LOSS_SIGNAL"},
		"never told lost"},
	{"MUTANT_READ_RENEWS", []string{"-DF=1", "-DC=0", "-DDISC=0", "-DNOFENCE", "-DMUTANT_READ_RENEWS"},
		"which no handshake nor chain shows"},
	{"MUTANT_RENEW_AFTER_EXPIRY", []string{"-DF=1", "-DC=0", "-DDISC=0", "-DNOFENCE", "-DMUTANT_RENEW_AFTER_EXPIRY"},
		"which no handshake nor chain shows"},
	{"OWNER_AFTER_REPLY", []string{"-DF=1", "-DC=0", "-DCUT=0", "-DNOFENCE", "-DOWNER_AFTER_REPLY"},
		"the owner of a node created in session"},
	// The wrong step is an omission that only the leader's state calls
	// for (no retry of a failed delete whose node is still there): the
	// client's steps are the correct model's when the node is gone.
	{"MUTANT_FORGET_FAILED_DELETE", []string{"-DF=1", "-DC=0", "-DCUT=0", "-DMUTANT_FORGET_FAILED_DELETE"}, ""},
}

// TestSpinMutants: each mutant's counterexample, which takes the wrong
// step (its marker printed), is refused at the step the table names.
func TestSpinMutants(t *testing.T) {
	src := spinDir(t)
	ctx := t.Context()
	var jobs []func(string)
	for _, m := range spinMutants {
		jobs = append(jobs, func(dir string) {
			steps, marks, err := trail(ctx, dir, m.defines)
			if err != nil {
				t.Error(err)
				return
			}
			if len(marks) == 0 {
				t.Errorf("%s: the counterexample never takes the wrong step", m.name)
			}
			v := replayed(t, m.name, steps).First()
			switch {
			case m.refuses == "" && v == nil:
				t.Logf("%s: accepted, as expected (%s)", m.name, marks[0])
			case m.refuses == "":
				t.Errorf("%s: refused, unexpectedly: %v", m.name, v)
			case v == nil:
				t.Errorf("%s: counterexample (%s) replayed clean", m.name, marks[0])
			case !strings.Contains(v.Rule, m.refuses):
				t.Errorf("%s: refused for %q, want %q: %v", m.name, v.Rule, m.refuses, v)
			default:
				t.Logf("%s: refused: %v", m.name, v)
			}
		})
	}
	inParallel(t, src, jobs)
}

// TestSpinMutantSimulations: random simulations of the lease's mutants,
// whose wrong step every simulation takes, are refused whenever it shows.
func TestSpinMutantSimulations(t *testing.T) {
	src := spinDir(t)
	ctx := t.Context()
	var jobs []func(string)
	for _, m := range spinMutants[1:3] {
		for seed := 1; seed <= 20; seed++ {
			jobs = append(jobs, func(dir string) {
				args := append([]string{fmt.Sprintf("-n%d", seed), "-T", "-DEMIT"}, m.defines...)
				out, err := simulate(ctx, dir, args)
				if err != nil {
					t.Error(err)
					return
				}
				steps, marks := emitted(out)
				if v := replayed(t, m.name, steps).First(); len(marks) > 0 && v == nil {
					t.Errorf("%s -n%d: took its wrong step (%s) and replayed clean", m.name, seed, marks[0])
				}
			})
		}
	}
	inParallel(t, src, jobs)
}
