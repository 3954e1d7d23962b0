package main

import (
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/results"
)

// TestRedsyncFlags: -impl takes redsync (never in "all"), beside the
// ZooKeeper locks and in a matrix; the runs it cannot take part in are
// refused.
func TestRedsyncFlags(t *testing.T) {
	c, err := parseFlags([]string{"-impl", "tier,gozk,redsync"}, io.Discard)
	if err != nil || !slices.Equal(c.Impls, []proto.Impl{proto.Tier, proto.Gozk, proto.Redsync}) {
		t.Fatalf("-impl tier,gozk,redsync: %v, %v", err, c.Impls)
	}
	if c, err := parseFlags([]string{"-impl", "all"}, io.Discard); err != nil || slices.Contains(c.Impls, proto.Redsync) {
		t.Errorf("-impl all: %v, %v", err, c.Impls)
	}
	c, err = parseFlags([]string{"-matrix", "quick", "-impl", "tier,gozk,redsync"}, io.Discard)
	if err != nil || c.Matrix == nil || !slices.Contains(c.Impls, proto.Redsync) {
		t.Errorf("-matrix with redsync: %v, %v", err, c.Impls)
	}
	for _, args := range [][]string{
		{"-impl", "redsync", "-fault", "kill"},
		{"-impl", "redsync", "-recipe", "rw"},
		{"-impl", "redsync", "-recipe", "multi"},
		{"-mix", "tier:1,redsync:1"},
	} {
		if _, err := parseFlags(args, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

// TestRedsync runs redsync on a redis-server that stress starts, beside
// gozk: the checker passes it on the holds' times (it has no token), and
// its requests and CPU are counted as the ZooKeeper locks' are: the
// commands the server processed and the workers sent (SET NX as create,
// the unlock script as delete), the server's processor time by its pid.
func TestRedsync(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (scripts/install-deps.sh installs it): redsync cannot be measured")
	}
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := stress(t, "-impl", "redsync,gozk", "-procs", "2", "-goroutines", "4", "-paths", "2",
		"-duration", "2s", "-json", jsonPath)
	if code != exitOK {
		t.Fatalf("exit status %d, want 0", code)
	}
	if !strings.Contains(stderr, "starting a local redis-server") || !strings.Contains(stdout, "redsync") {
		t.Errorf("no redis-server started, or no redsync row:\n%s%s", stderr, stdout)
	}
	s := readSummary(t, jsonPath)
	if !s.OK || len(s.Results) != 2 || s.Results[0].Impl != proto.Redsync {
		t.Fatalf("summary: ok %v, %d results", s.OK, len(s.Results))
	}
	r := s.Results[0]
	redsyncChecked(t, r)
	redsyncCounted(t, r)
}

// redsyncChecked: the checker passed a redsync run on the holds' times
// alone, every hold counted once.
func redsyncChecked(t *testing.T, r results.Impl) {
	t.Helper()
	c := r.Check
	switch {
	case c.Violations() != 0 || r.Errors != 0:
		t.Errorf("violations %+v, errors %d %q", c, r.Errors, r.ErrorSamples)
	case c.TokensChecked || r.TokenKind != "":
		t.Errorf("tokens checked (%q) for a lock without any", r.TokenKind)
	case r.Acquisitions <= 0 || int64(c.Holds) != r.Cost.HoldsWarmup+r.Acquisitions+r.Cost.HoldsAfter:
		t.Errorf("%d + %d + %d acquisitions before, inside and after the window, %d holds checked",
			r.Cost.HoldsWarmup, r.Acquisitions, r.Cost.HoldsAfter, c.Holds)
	case r.PerSec <= 0 || r.ThroughputVsGozk <= 0:
		t.Errorf("%.0f acquisitions/s, %.2f of gozk's", r.PerSec, r.ThroughputVsGozk)
	case r.PeakZnodes != -1 || r.PeakWatches != -1 || len(r.PeakZnodesPerPath) != 0:
		// Its locks are Redis keys: no znode or watch to count (the
		// table said 0 znodes, as if it had counted them).
		t.Errorf("peak znodes %d, watches %d, %d paths sampled: want n/a (-1) and none", r.PeakZnodes, r.PeakWatches, len(r.PeakZnodesPerPath))
	}
}

// redsyncCounted: a redsync run's CPU, on both sides, and its requests by
// kind are counted. The server counts the commands the workers sent (each
// side over its own interval) and those the unlock script runs: a GET,
// and a DEL when the key is its caller's.
func redsyncCounted(t *testing.T, r results.Impl) {
	t.Helper()
	c, ops := r.Cost, r.Cost.ClientOps
	sent, ran, deletes := c.ClientReqPerAcq, r.RequestsPerAcq, c.ClientOpsPerAcq["delete"]
	switch {
	case c.ClientCPUPerAcqUS <= 0 || c.ServerCPUPerAcqUS < 0:
		t.Errorf("client CPU %.1fµs, server CPU %.1fµs per acquisition: want both measured", c.ClientCPUPerAcqUS, c.ServerCPUPerAcqUS)
	case ops == nil || c.ClientOpsPerAcq["create"] < 0.95 || deletes < 0.95 || ops.GetChildren != 0:
		// At least a SET and an unlock each (give or take a grant at the
		// edges of the window).
		t.Errorf("requests by kind %+v, per acquisition %v", ops, c.ClientOpsPerAcq)
	case ran < 2 || sent < 2:
		t.Errorf("%.2f commands/acquisition ran, %.2f sent: want at least a SET and an unlock each", ran, sent)
	case ran < 0.9*sent || ran > 1.1*(sent+2*deletes):
		t.Errorf("%.2f requests/acquisition sent (%.2f unlocks), %.2f commands ran", sent, deletes, ran)
	case c.Lease || c.Limits != nil:
		t.Errorf("lease %v, limits %+v: redsync has no session and is not probed", c.Lease, c.Limits)
	}
}
