package main

import (
	"strings"
	"testing"

	"github.com/tierlock/tierlock/internal/linear"
)

// Porcupine's check of a run's history (internal/linear) is a second
// opinion beside the checker's: it must pass a lock's history and fail a
// run without a lock on its own account, saying why.
func TestPorcupineCheckOfRuns(t *testing.T) {
	args := []string{"-procs", "2", "-goroutines", "4", "-acquisitions", "200", "-hold", "200us"}
	t.Run("tier", func(t *testing.T) {
		s, stdout := stressJSON(t, exitOK, append(args, "-impl", "tier")...)
		p := s.Results[0].Porcupine
		if p == nil || !p.OK() || p.Paths != 1 || p.Operations != 400 {
			t.Fatalf("porcupine %+v", p)
		}
		if !strings.Contains(stdout, "PASS") || !strings.Contains(stdout, "; porcupine: linearizable (1 path, 400 operations, ") {
			t.Errorf("verdict without Porcupine's:\n%s", stdout)
		}
	})
	for _, recipe := range []string{"mutex", "rw", "semaphore"} {
		t.Run("nolock-"+recipe, func(t *testing.T) {
			s, stdout := stressJSON(t, exitViolation, append(args, "-impl", "nolock", "-recipe", recipe)...)
			porcupineFailed(t, s.Results[0].Porcupine, "held by", "reader(s) in", "permits in use")
			if !strings.Contains(stdout, "nolock: porcupine: not linearizable (") {
				t.Errorf("failures without Porcupine's:\n%s", stdout)
			}
		})
	}
}

// porcupineFailed fails t unless p is a failed check whose first
// violation's reason contains one of reasons.
func porcupineFailed(t *testing.T, p *linear.Result, reasons ...string) {
	t.Helper()
	if p == nil || p.Verdict != linear.NotLinearizable || p.Violation == nil || p.Failed == 0 {
		t.Fatalf("porcupine %+v", p)
	}
	for _, r := range reasons {
		if strings.Contains(p.Violation.Reason, r) {
			return
		}
	}
	t.Errorf("violation %+v, want a reason with one of %q", *p.Violation, reasons)
}
