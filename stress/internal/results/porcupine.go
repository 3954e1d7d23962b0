package results

import (
	"fmt"

	"github.com/tierlock/tierlock/internal/linear"
)

// porcupineOK reports whether Porcupine found the history linearizable
// (or the summary predates the check).
func (r Impl) porcupineOK() bool { return r.Porcupine == nil || r.Porcupine.OK() }

// allPorcupineOK reports whether every implementation's history passed
// Porcupine's check.
func allPorcupineOK(s Summary) bool {
	for _, r := range s.Results {
		if !r.porcupineOK() {
			return false
		}
	}
	return true
}

// porcupineSummary is the verdict's clause on Porcupine's check of the
// implementations' histories: "; porcupine: linearizable (P paths, O
// operations, T ms)" when every one passed (with "in K windows" after the
// operations when paths were cut into windows), else the verdict of the
// first that did not ("" when none was checked).
func porcupineSummary(s Summary) string {
	var sum linear.Result
	for _, r := range s.Results {
		p := r.Porcupine
		if p == nil {
			continue
		}
		if !p.OK() {
			return fmt.Sprintf("; %s: porcupine: %s", r.Impl, p.Verdict)
		}
		sum.Verdict = p.Verdict
		sum.Paths += p.Paths
		sum.Operations += p.Operations
		sum.Millis += p.Millis
		sum.Windows += p.Windows
	}
	if sum.Verdict == "" {
		return ""
	}
	paths := "paths"
	if sum.Paths == 1 {
		paths = "path"
	}
	windows := ""
	if sum.Windows > sum.Paths {
		windows = fmt.Sprintf(" in %d windows", sum.Windows)
	}
	return fmt.Sprintf("; porcupine: %s (%d %s, %d operations%s, %d ms)", sum.Verdict, sum.Paths, paths, sum.Operations, windows, sum.Millis)
}
