package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestRecipeMulti: multi-lock holds recorded on every path they cover.
// With 4 members of 4 paths every hold covers every path, each given in
// another order: the checker finds no overlap and increasing tokens on
// each path, and each path has exactly one record per hold (one record per
// hold, of the picked path only, would spread over the paths at random).
// Without a lock the checker finds overlaps.
func TestRecipeMulti(t *testing.T) {
	s, stdout := stressJSON(t, exitOK, "-recipe", "multi", "-members", "4", "-paths", "4", "-pick", "random",
		"-impl", "tier", "-procs", "2", "-goroutines", "4", "-duration", "2s")
	if !strings.Contains(stdout, "PASS: mutual exclusion held") {
		t.Errorf("no verdict:\n%s", stdout)
	}
	r := s.Results[0]
	checkClean(t, r)
	if !r.Check.TokensChecked {
		t.Error("tokens were not checked")
	}
	if len(r.Check.Paths) != 4 {
		t.Fatalf("paths checked: %+v", r.Check.Paths)
	}
	for _, p := range r.Check.Paths {
		if p.Holds*4 != r.Check.Holds {
			t.Errorf("path %d: %d holds of %d member holds, want a quarter", p.Path, p.Holds, r.Check.Holds)
		}
	}

	s, stdout = stressJSON(t, exitViolation, "-recipe", "multi", "-members", "2", "-paths", "3", "-impl", "nolock",
		"-procs", "2", "-goroutines", "4", "-acquisitions", "200", "-hold", "200us")
	if s.OK || s.Results[0].Check.Overlaps == 0 || !strings.Contains(stdout, "FAIL") {
		t.Fatalf("no violation found without a lock: %+v", s.Results[0].Check)
	}
}

func TestRecipeMultiUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-members", "2"},
		{"-recipe", "rw", "-members", "2"},
		{"-recipe", "multi", "-members", "1", "-paths", "3"},
		{"-recipe", "multi", "-members", "4", "-paths", "3"},
		{"-recipe", "multi", "-paths", "1"},
		{"-recipe", "multi", "-paths", "3", "-impl", "curator"},
		{"-recipe", "multi", "-paths", "3", "-impl", "zklock"},
		{"-recipe", "multi", "-paths", "3", "-handoff"},
		{"-recipe", "multi", "-paths", "3", "-mix", "tier:2"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != exitUsage {
			t.Errorf("stress %v: exit %d, want %d", args, code, exitUsage)
		}
		if !strings.HasPrefix(stderr.String(), "stress: ") {
			t.Errorf("stress %v: unclear error %q", args, stderr.String())
		}
	}
}
