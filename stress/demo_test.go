package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/stress/internal/matrix"
	"github.com/tierlock/tierlock/stress/internal/proto"
)

// TestDemoClaimsAreREADMEs checks that every figure the demo sets its runs
// beside is one README states: a README that changes its figures must
// change the demo's with them.
func TestDemoClaimsAreREADMEs(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.Join(strings.Fields(string(b)), " ")
	quotes := map[string]string{
		"5.3×":          "5.3× its throughput on one server",
		"7.0×":          "7.0× on three",
		"1.8×":          "1.8× redsync's",
		"0.08":          "0.08 requests per acquisition against its 5",
		"5":             "0.08 requests per acquisition against its 5",
		"0.22×":         "0.22× its CPU",
		"tens of times": "tens of times faster on one busy path",
	}
	for _, sh := range demoShapes {
		for _, cl := range sh.Claims {
			if cl.Want == 0 {
				continue // no figure stated
			}
			q, ok := quotes[cl.README]
			if !ok {
				t.Errorf("%s: %s: README %q: no quote to find it by", sh.Name, cl.What, cl.README)
				continue
			}
			if !strings.Contains(readme, q) {
				t.Errorf("%s: %s: README no longer says %q", sh.Name, cl.What, q)
			}
		}
	}
	if !strings.Contains(readme, "4 processes × 1,000 goroutines × 1,000 keys") {
		t.Error("README's keyed shape is no longer 4 processes × 1,000 goroutines × 1,000 keys: change the demo's")
	}
}

// TestDemoShapesParse checks that every shape's command line is one
// stress -matrix takes, with the implementations and cell it means.
func TestDemoShapesParse(t *testing.T) {
	t.Setenv(zkserver.EnvServers, "")
	c := demoConfig{Repeat: 3, Goroutines: 1000, Paths: 1000}
	want := map[string][]proto.Impl{
		"keyed":    {proto.Tier, proto.Gozk, proto.Redsync},
		"ensemble": {proto.Tier, proto.Gozk},
		"onepath":  {proto.TierHandoff, proto.Tier, proto.Gozk},
	}
	for _, sh := range demoShapes {
		cfg, err := parseFlags(append(sh.Args(c), sh.runArgs(c)...), io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", sh.Name, err)
		}
		if got := cfg.Impls; !slices.Equal(got, want[sh.Name]) {
			t.Errorf("%s: implementations %v, want %v", sh.Name, got, want[sh.Name])
		}
		m := cfg.Matrix
		if m == nil || len(m.Cells()) != 3 || m.Repeat != 3 || m.Probe != 0 {
			t.Fatalf("%s: matrix %+v, want one cell run 3 times, no probe", sh.Name, m)
		}
		if d, w := sh.windows(c); m.Duration != d || m.RunWarmup != w {
			t.Errorf("%s: windows %v after %v, want %v after %v", sh.Name, m.Duration, m.RunWarmup, d, w)
		}
	}
}

func TestDemoFlags(t *testing.T) {
	t.Setenv(zkserver.EnvServers, "")
	c, err := parseDemoFlags([]string{"-demo", "-duration", "20s", "-warmup", "5s", "-demo-shapes", "onepath"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if d, w := demoShapes[0].windows(c); d != 20*time.Second || w != 5*time.Second || len(c.Shapes) != 1 {
		t.Errorf("got %v after %v, shapes %v; want 20s after 5s, [onepath]", d, w, c.Shapes)
	}
	for _, args := range [][]string{
		{"-demo", "-demo-shapes", "keyed,nope"},
		{"-demo", "-demo-repeat", "0"},
		{"-demo", "-duration", "-1s"},
		{"-demo", "-zk", "127.0.0.1:2181"},
	} {
		if _, err := parseDemoFlags(args, io.Discard); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	t.Setenv(zkserver.EnvServers, "127.0.0.1:2181")
	if _, err := parseDemoFlags([]string{"-demo"}, io.Discard); err == nil {
		t.Error("$TIERLOCK_ZK_SERVERS set: no error")
	}
}

func TestDemoReading(t *testing.T) {
	for _, tc := range []struct {
		row  demoRow
		want string
	}{
		{demoRow{Want: 5.3, README: "5.3×", Stated: true, Values: []float64{4, 5.5, 6}}, "README's in range"},
		{demoRow{Want: 5.3, README: "5.3×", Stated: true, Values: []float64{1.9, 2.2, 1.3}}, "all 3 below"},
		{demoRow{Want: 0.08, README: "0.08", Stated: true, Values: []float64{0.09, 0.1}}, "all 2 above"},
		{demoRow{Want: 0.08, README: "0.08", Stated: true, Values: []float64{0.084, 0.0849}}, "README's in range"},
		{demoRow{Want: 5, README: "5", Stated: true, Values: []float64{5.01, 5.05}}, "README's in range"},
		{demoRow{Want: 10, Stated: true, AtLeast: true, Values: []float64{64, 73}}, "all 2 ≥ 10.0"},
		{demoRow{Want: 10, Stated: true, AtLeast: true, Values: []float64{64, 9}}, "1 of 2 < 10.0"},
		{demoRow{Values: []float64{1}}, "–"},
		{demoRow{Want: 5.3, Stated: true}, "not measured"},
	} {
		if got := tc.row.reading(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.row, got, tc.want)
		}
	}
}

func TestDemoRatios(t *testing.T) {
	r := matrix.Result{Impls: []matrix.Figures{
		{Impl: proto.Tier, PerSec: 6000, RequestsPerAcq: 0.08, ClientCPUUS: 100, ServerCPUUS: 100},
		{Impl: proto.Gozk, PerSec: 2000, RequestsPerAcq: 5, ClientCPUUS: 400, ServerCPUUS: 600},
	}}
	if v, ok := ratioOf(proto.Tier, proto.Gozk)(r); !ok || v != 3 {
		t.Errorf("ratio %v %v, want 3", v, ok)
	}
	if _, ok := ratioOf(proto.Tier, proto.Redsync)(r); ok {
		t.Error("ratio to redsync, which did not run: measured")
	}
	if v, ok := cpuRatioOf(proto.Tier, proto.Gozk)(r); !ok || v != 0.2 {
		t.Errorf("CPU ratio %v %v, want 0.2", v, ok)
	}
	if v, ok := requestsOf(proto.Gozk)(r); !ok || v != 5 {
		t.Errorf("requests %v %v, want 5", v, ok)
	}
}

func TestDemoWorse(t *testing.T) {
	for _, tc := range [][3]int{
		{exitOK, exitOK, exitOK},
		{exitOK, exitRun, exitRun},
		{exitRun, exitViolation, exitViolation},
		{exitViolation, exitRun, exitViolation},
	} {
		if got := worse(tc[0], tc[1]); got != tc[2] {
			t.Errorf("worse(%d, %d) = %d, want %d", tc[0], tc[1], got, tc[2])
		}
	}
}

// TestDemoRun runs the one-path shape once, in short windows, on the
// server the demo starts: its table sets README's floor beside the runs
// and the checker's verdict closes it.
func TestDemoRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a ZooKeeper of its own and runs three implementations (about 15 s)")
	}
	t.Setenv(zkserver.EnvServers, "")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-demo", "-demo-shapes", "onepath", "-demo-repeat", "1",
		"-duration", "500ms", "-warmup", "300ms", "-demo-out", t.TempDir()}, &stdout, &stderr)
	t.Logf("stress -demo: exit %d\n%s%s", code, stdout.String(), stderr.String())
	if code != exitOK {
		t.Fatalf("exit %d, want %d", code, exitOK)
	}
	for _, want := range []string{"4×64×1, 1 server", "hand-off ÷ zk.Lock", "tens of times", " 10.0", // the reading against README's floor, either way
		"PASS: 0 violations in ", "the demo took "} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}
