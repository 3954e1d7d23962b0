package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/stress/internal/cells"
	"github.com/tierlock/tierlock/stress/internal/matrix"
	"github.com/tierlock/tierlock/stress/internal/proto"
)

// The matrix flags: presets, axes restricted by flags, and every bad input
// refused with exit status 2 and a message, before anything runs.
func TestMatrixFlags(t *testing.T) {
	var stderr bytes.Buffer
	c, err := parseFlags([]string{"-matrix", "full"}, &stderr)
	if err != nil || c.Matrix == nil {
		t.Fatalf("-matrix full: %v, %+v", err, c.Matrix)
	}
	if n := len(c.Matrix.Cells()); n != 144 {
		t.Errorf("full has %d cells, want 2 servers x 3 x 4 x 3 x 2 = 144", n)
	}
	if !slices.Equal(c.Impls, []proto.Impl{proto.Tier, proto.TierHandoff, proto.Gozk}) {
		t.Errorf("default implementations %v", c.Impls)
	}
	c, err = parseFlags([]string{"-matrix", "quick", "-matrix-procs", "2, 4,2", "-matrix-goroutines", "8",
		"-matrix-paths", "1,16", "-matrix-holds", "0,1ms", "-matrix-servers", "ensemble", "-matrix-repeat", "3",
		"-matrix-warmup", "0", "-duration", "3s", "-impl", "tier,gozk"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	m := c.Matrix
	switch {
	case !slices.Equal(m.Procs, []int{2, 4}) || !slices.Equal(m.Goroutines, []int{8}) || !slices.Equal(m.Paths, []int{1, 16}):
		t.Errorf("axes %v %v %v", m.Procs, m.Goroutines, m.Paths)
	case !slices.Equal(m.Holds, []time.Duration{0, time.Millisecond}) || !slices.Equal(m.Topologies, []cells.Topology{cells.Ensemble}):
		t.Errorf("holds %v, servers %v", m.Holds, m.Topologies)
	case m.Repeat != 3 || m.Warmup != 0 || m.Duration != 3*time.Second || len(m.Cells()) != 24:
		t.Errorf("repeat %d, warm-up %v, duration %v, %d cells", m.Repeat, m.Warmup, m.Duration, len(m.Cells()))
	case !slices.Equal(c.Impls, []proto.Impl{proto.Tier, proto.Gozk}):
		t.Errorf("-impl: %v", c.Impls)
	}
	c, err = parseFlags([]string{"-matrix", "quick", "-zk", "127.0.0.1:2181"}, &stderr)
	if err != nil || !slices.Equal(c.Matrix.Topologies, []cells.Topology{cells.External}) {
		t.Errorf("-zk: %v, servers %v", err, c.Matrix)
	}

	jsonPath := filepath.Join(t.TempDir(), "m.json")
	for _, tc := range []struct {
		args []string
		want string // in the message
	}{
		{[]string{"-matrix", "huge"}, `unknown preset "huge"`},
		{[]string{"-matrix", ""}, `unknown preset ""`},
		{[]string{"-matrix", "quick", "-matrix-procs", "0"}, `-matrix-procs: "0" is not a positive number`},
		{[]string{"-matrix", "quick", "-matrix-procs", "two"}, `-matrix-procs: "two"`},
		{[]string{"-matrix", "quick", "-matrix-goroutines", ""}, `-matrix-goroutines: "" is not`},
		{[]string{"-matrix", "quick", "-matrix-paths", "1,,2"}, `-matrix-paths: "" is not`},
		{[]string{"-matrix", "quick", "-matrix-holds", "-1ms"}, `-matrix-holds: "-1ms"`},
		{[]string{"-matrix", "quick", "-matrix-holds", "soon"}, `-matrix-holds: "soon"`},
		{[]string{"-matrix", "quick", "-matrix-servers", "cloud"}, `"cloud" is neither standalone nor ensemble`},
		{[]string{"-matrix", "quick", "-matrix-servers", "ensemble", "-zk", "127.0.0.1:2181"}, "does not go with -zk"},
		{[]string{"-matrix", "quick", "-matrix-repeat", "0"}, "-matrix-repeat must be at least 1"},
		{[]string{"-matrix", "quick", "-matrix-warmup", "-1s"}, "-matrix-warmup must not be negative"},
		{[]string{"-matrix", "quick", "-duration", "0s"}, "-duration must be positive"},
		{[]string{"-matrix", "quick", "-matrix-resume"}, "-matrix-resume needs -json"},
		{[]string{"-matrix", "quick", "-procs", "4"}, "-matrix and -procs do not go together"},
		{[]string{"-matrix", "quick", "-paths", "4"}, "-matrix and -paths"},
		{[]string{"-matrix", "quick", "-hold", "1ms"}, "-matrix and -hold"},
		{[]string{"-matrix", "quick", "-acquisitions", "1000"}, "-matrix and -acquisitions"},
		{[]string{"-matrix", "quick", "-fault", "drop"}, "-matrix and -fault"},
		{[]string{"-matrix", "quick", "-mix", "tier:1,gozk:1"}, "-matrix and -mix"},
		{[]string{"-matrix", "quick", "-impl", "tier,nolock"}, "nolock is a self-test"},
		{[]string{"-matrix-procs", "1"}, "-matrix-procs needs -matrix"},
		{[]string{"-matrix-resume", "-json", jsonPath}, "-matrix-resume needs -matrix"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), tc.args, &stdout, &stderr); code != exitUsage {
			t.Errorf("stress %v: exit %d, want %d", tc.args, code, exitUsage)
		}
		if !strings.HasPrefix(stderr.String(), "stress: ") || !strings.Contains(stderr.String(), tc.want) || stdout.Len() > 0 {
			t.Errorf("stress %v: error %q, want one saying %q (stdout %q)", tc.args, stderr.String(), tc.want, stdout.String())
		}
	}
}

func readMatrix(t *testing.T, path string) matrix.Summary {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s matrix.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("matrix JSON: %v", err)
	}
	return s
}

// A real matrix of two cells, run as two commands: the first runs one cell
// and writes its files; the second, with -matrix-resume and one more hold
// on the axis, keeps that cell and runs only the new one. Every cell has
// both implementations, checked, with a ratio to gozk and ZooKeeper
// figures, and the report draws the heat map.
func TestMatrixTiny(t *testing.T) {
	dir := t.TempDir()
	jsonPath, htmlPath := filepath.Join(dir, "m.json"), filepath.Join(dir, "m.html")
	common := []string{"-matrix", "quick", "-matrix-procs", "1", "-matrix-goroutines", "2", "-matrix-warmup", "0",
		"-duration", "1s", "-impl", "tier,gozk", "-json", jsonPath, "-report", htmlPath}
	code, _, _ := stress(t, append(common, "-matrix-holds", "0")...)
	if code != exitOK {
		t.Fatalf("first cell: exit %d", code)
	}
	if s := readMatrix(t, jsonPath); len(s.Results) != 1 || !s.Complete || !s.OK {
		t.Fatalf("after the first command: %d results, complete %v, ok %v", len(s.Results), s.Complete, s.OK)
	}
	code, stdout, stderr := stress(t, append(common, "-matrix-holds", "0,1ms", "-matrix-resume")...)
	if code != exitOK {
		t.Fatalf("resumed: exit %d", code)
	}
	if !strings.Contains(stderr, "resuming with 1 cell(s)") || strings.Count(stderr, "stress: matrix: [") != 1 {
		t.Errorf("the resumed matrix did not run exactly the one new cell:\n%s", stderr)
	}
	s := readMatrix(t, jsonPath)
	if len(s.Results) != 2 || !s.Complete || !s.OK || len(s.Points) != 2 {
		t.Fatalf("%d results, %d points, complete %v, ok %v, failures %q", len(s.Results), len(s.Points), s.Complete, s.OK, s.Failures)
	}
	for _, r := range s.Results {
		if r.Cell.Topology != cells.External || len(r.Impls) != 2 {
			t.Fatalf("%s: topology %s, %d implementations", r.Key, r.Cell.Topology, len(r.Impls))
		}
		for _, f := range r.Impls {
			switch {
			case !f.OK || f.Acquisitions <= 0 || f.PerSec <= 0:
				t.Errorf("%s %s: ok %v, %d acquisitions", r.Key, f.Impl, f.OK, f.Acquisitions)
			case f.Ratio <= 0 || f.RequestsPerAcq <= 0 || f.P99US <= 0 || f.JainGoroutines <= 0:
				t.Errorf("%s %s: missing figures %+v", r.Key, f.Impl, f)
			case f.Impl == proto.Tier && f.PeakZnodes > 1:
				t.Errorf("%s: tier had %d znodes on its path with one process", r.Key, f.PeakZnodes)
			case f.ClientCPUUS <= 0 || f.PeakGoroutines <= 0 || f.OpsPerAcq == nil || f.OpsPerAcq["getChildren"] <= 0 || f.Holds <= 0:
				t.Errorf("%s %s: missing cost figures %+v", r.Key, f.Impl, f)
			case f.TimeoutMs != 10000 && !external():
				t.Errorf("%s %s: session timeout granted %dms, 10s asked", r.Key, f.Impl, f.TimeoutMs)
			}
		}
	}
	if !strings.Contains(stdout, "PASS: 0 violation(s) in ") || !strings.Contains(stdout, "2 of 2 cells ran, none with a lock error") {
		t.Errorf("verdict missing:\n%s", stdout)
	}
	page, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "tier, external: throughput vs gozk", "1 path", "hold 1ms", "1×2"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// Interrupted before its first cell, a matrix still writes its (empty)
// files, says it is incomplete and exits 3.
func TestMatrixInterrupted(t *testing.T) {
	dir := t.TempDir()
	jsonPath, htmlPath := filepath.Join(dir, "m.json"), filepath.Join(dir, "m.html")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"-matrix", "quick", "-zk", "127.0.0.1:1", "-quiet", "-json", jsonPath, "-report", htmlPath}, &stdout, &stderr)
	if code != exitRun {
		t.Fatalf("exit %d, want %d\n%s", code, exitRun, stderr.String())
	}
	s := readMatrix(t, jsonPath)
	if s.Complete || s.OK || s.Cells != 4 || len(s.Results) != 0 {
		t.Fatalf("complete %v, ok %v, %d cells planned, %d results", s.Complete, s.OK, s.Cells, len(s.Results))
	}
	if _, err := os.Stat(htmlPath); err != nil {
		t.Fatalf("no report: %v", err)
	}
	if !strings.Contains(stdout.String(), "INCOMPLETE: 0 of 4 cells") {
		t.Errorf("verdict: %s", stdout.String())
	}
}
