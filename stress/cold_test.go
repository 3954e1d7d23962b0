package main

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/stress/internal/proto"
)

func TestColdFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		cold bool
	}{
		{[]string{"-cold"}, true},
		{[]string{"-zk", "h:1", "--cold=true"}, true},
		{[]string{"-cold=false"}, false},
		{[]string{"-impl", "tier"}, false},
		{[]string{"--", "-cold"}, false},
	} {
		if got := isCold(c.args); got != c.cold {
			t.Errorf("isCold(%q) = %v, want %v", c.args, got, c.cold)
		}
	}
	cfg, err := parseColdFlags([]string{"-cold"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	wantIdle := []time.Duration{5 * time.Second, 15 * time.Second, 35 * time.Second, time.Minute, 5 * time.Minute}
	if !slices.Equal(cfg.Idle, wantIdle) || cfg.N != 20 || cfg.SessionTimeout != 10*time.Second ||
		!slices.Equal(cfg.Impls, []proto.Impl{proto.Gozk, proto.Zkcompat, proto.Tier}) {
		t.Errorf("defaults: %+v", cfg)
	}
	cfg, err = parseColdFlags([]string{"-cold", "-impl", "tier,gozk", "-cold-idle", "1m,5s,5s"}, io.Discard)
	if err != nil || !slices.Equal(cfg.Impls, []proto.Impl{proto.Gozk, proto.Tier}) ||
		!slices.Equal(cfg.Idle, []time.Duration{5 * time.Second, time.Minute}) {
		t.Errorf("-impl tier,gozk -cold-idle 1m,5s,5s: %+v, %v", cfg, err)
	}
	for _, bad := range [][]string{
		{"-cold", "-impl", "zklock"},
		{"-cold", "-cold-idle", "5s,0s"},
		{"-cold", "-cold-n", "0"},
		{"-cold", "-duration", "1s"}, // not a flag of -cold
		{"-cold", "-root", "no-slash"},
	} {
		if code := runCold(context.Background(), bad, io.Discard, io.Discard); code != exitUsage {
			t.Errorf("stress %q: exit %d, want %d", bad, code, exitUsage)
		}
	}
}

func TestColdPlan(t *testing.T) {
	cfg := coldConfig{Impls: []proto.Impl{proto.Gozk, proto.Tier}, Idle: []time.Duration{time.Second, time.Minute}, N: 3, Stagger: 10 * time.Millisecond}
	jobs := coldPlan(cfg, "/r")
	if len(jobs) != 12 {
		t.Fatalf("%d jobs, want 12", len(jobs))
	}
	paths := map[string]bool{}
	for i, j := range jobs {
		if j.start != time.Duration(i)*cfg.Stagger {
			t.Errorf("job %d starts at %v", i, j.start)
		}
		if paths[j.first] || paths[j.cold] {
			t.Errorf("job %d reuses a path: %s %s", i, j.first, j.cold)
		}
		paths[j.first], paths[j.cold] = true, true
	}
	if jobs[0].spell != 1 || jobs[0].impl != 0 || jobs[1].impl != 1 || jobs[len(jobs)-1].spell != 0 {
		t.Errorf("not longest spell first, implementations interleaved: %+v", jobs)
	}
}

// TestColdRun runs stress -cold briefly on a real server: every cell
// measured, the table within 120 columns, the paths removed. It checks
// what is reported, not how fast.
func TestColdRun(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"-cold", "-zk", strings.Join(zktest.Servers(t), ","), "-cold-idle", "300ms,1s", "-cold-n", "3", "-root", "/stress-cold-test"}
	code := runCold(context.Background(), args, &stdout, &stderr)
	out := stdout.String()
	t.Logf("exit %d\n%s%s", code, out, stderr.String())
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"zk.Lock", "zkcompat", "tier", "first", "after 300ms", "after 1s", "/6", "/3", "target"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "|") && len([]rune(line)) > 120 {
			t.Errorf("table line of %d columns: %q", len([]rune(line)), line)
		}
	}
	conn, err := dialConn(context.Background(), zktest.Servers(t), coldConfig{SessionTimeout: 10 * time.Second, ConnectTimeout: 10 * time.Second}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.close()
	if children, _, err := conn.conn.Children("/stress-cold-test"); err != nil || len(children) != 0 {
		t.Errorf("left under the root: %v, %v", children, err)
	}
}
