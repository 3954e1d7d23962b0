package results

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/stress/internal/fault"
	"github.com/tierlock/tierlock/stress/internal/figures"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/runner"
)

// fixture is the figures of a run of every implementation (stress -impl
// all -handoff: 4 processes x 64 goroutines), every field the tables show filled
// with values of their widest kind, on a machine that was busy and stolen
// from as much as given.
func fixture(busy, steal float64) []Impl {
	var out []Impl
	for i, im := range []proto.Impl{proto.Tier, proto.TierHandoff, proto.Zklock, proto.Gozk} {
		f := float64(i + 1)
		ops := map[string]float64{}
		for k, name := range proto.OpNames {
			ops[name] = 0.25 * float64(k+i)
		}
		out = append(out, Impl{
			Impl: im, Procs: 4, Goroutines: 64, Paths: 1,
			Acquisitions: 1234567 * int64(i+1), ElapsedSec: 27.3, PerSec: 61728.35 / f,
			LatencyUS:  figures.Latency{P50: 1234.5 * f, P90: 23456.7 * f, P99: 345678.9 * f, Max: 4567890 * f},
			HoldMeanUS: 12.34 * f,
			ZKRequests: 123456789, RequestsPerAcq: 4.98,
			PeakZnodes: 256, PeakWatches: 255, FairnessProcs: 0.999, FairnessGoroutines: 0.987,
			TokenKind: "zxid", Check: exclusion.Result{Holds: 1234567, TokensChecked: true},
			Cost: Cost{
				WindowSec: 20, HoldsWarmup: 123456, HoldsAfter: 1234, Abandoned: 255,
				ClientCPUPerAcqUS: 123.4 * f, ServerCPUPerAcqUS: 45.6 * f, PeakGoroutines: 1234,
				ClientOps: &proto.OpCounts{Create: 1}, ClientOpsPerAcq: ops, ClientReqPerAcq: 4.97,
				Lease: im != proto.Gozk, LeaseWaits: 12345, LeaseLapses: 0,
				TimeoutMinMs: 10000, TimeoutMaxMs: 40000,
				Host:    &runner.HostCPU{Busy: busy, Steal: steal},
				Limits:  &runner.Limits{Pairs: 12345.6, Chains: 2345.6, Seconds: 2},
				OfChain: 26.32 / f, OfPairs: 5 / f,
			},
		})
	}
	Compare(out)
	return out
}

// printed is everything the stress command prints of the results on its
// console, every table of a mutex run, a read/write lock run, a semaphore
// run and a fault run included.
func printed(t *testing.T, res []Impl) string {
	t.Helper()
	var b bytes.Buffer
	PrintTable(&b, res)
	PrintCost(&b, res)
	for _, cfg := range []runner.Config{
		{Recipe: proto.RW, Readers: 0.8},
		{Recipe: proto.Semaphore, Leases: 4, Permits: 2},
	} {
		rs := []Impl{res[0]}
		rs[0].RW = &RW{Reads: 1234567, Writes: 123456, ReadersMax: 256, ReadersMean: 12.34,
			ReadLatencyUS: res[0].LatencyUS, WriteLatencyUS: res[0].LatencyUS}
		rs[0].Sem = &Sem{Leases: 4, Permits: 2, PermitsMax: 4, PermitsMean: 3.21, Utilization: 0.8}
		if cfg.Recipe == proto.RW {
			rs[0].Sem = nil
		} else {
			rs[0].RW = nil
		}
		PrintRecipe(&b, cfg, rs)
	}
	PrintFaultLog(&b, faultRun(res))
	return b.String()
}

// faultRun is a fault run of res with a fault log of a few faults.
func faultRun(res []Impl) Summary {
	loss, expired := 0.52, false
	ev := &fault.Event{Impl: "tier-handoff", N: 12, Kind: fault.Kind("pause"), Variant: "holder, past the session timeout",
		Target: "worker 3 (pid 123456)", AtSec: 12.34, HealedSec: 10.5, RecoveryAnySec: 0.01, RecoveryOwnSec: 11.2,
		Recovered: true, HolderLossSec: &loss, HolderCause: "zklock: lock lost: zklock: ZooKeeper session expired",
		SessionExpired: &expired, Note: "the holder woke after a later holder had written token 123456789 to the store"}
	failed := *ev
	failed.N, failed.Recovered, failed.Failure = 13, false, "the worker did not acquire again within the session timeout + 5s"
	return Summary{
		Config:  runner.Config{Faults: []fault.Kind{"pause", "kill"}, FaultSeed: 123456789, FaultEvery: 3 * time.Second, SessionTimeout: 2 * time.Second},
		Results: res,
		Faults:  []*fault.Event{ev, &failed},
	}
}

// Every line of every console table, and of the lines around them, is at
// most Width (120) columns wide, and every figure is still there: a wide
// table is split, not cut.
func TestConsoleFitsWidth(t *testing.T) {
	res := fixture(0.97, 0.25)
	out := printed(t, res)
	for i, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > 120 {
			t.Errorf("line %d is %d columns wide, more than 120:\n%s", i+1, n, line)
		}
	}
	for _, want := range append(append(append([]string{}, tableHeader...), costHeader()...),
		"4.57s", "12.3µs", "4.98", "0.987", "10s-40s", "97% / 25%", "26.32", "FAILED") {
		if !strings.Contains(out, want) {
			t.Errorf("the console output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("the console output:\n%s", out)
	}
}

// Under the comparison table a legend says what each implementation is,
// so that a reader who sees zklock beat tier knows which one to use.
func TestConsoleLegend(t *testing.T) {
	var b bytes.Buffer
	PrintTable(&b, fixture(0.5, 0.01))
	out := b.String()
	for _, want := range []string{
		"tier          tierlock's two-tier lock (what you use: tier.Lock)",
		"tier-handoff  tier.Lock with WithHandoff",
		"zklock        tierlock's process-level lock alone, behind a sync.Mutex (a building block, not what to use)",
		"gozk          go-zookeeper's zk.Lock, one per goroutine (the baseline)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the legend lacks %q:\n%s", want, out)
		}
	}
	for im, what := range map[proto.Impl]string{
		proto.Zkcompat: "tierlock's drop-in for zk.Lock", proto.Curator: "Apache Curator's InterProcessMutex",
		proto.Kazoo: "kazoo's Lock", proto.Nolock: "no lock at all", proto.Mix: "processes of several implementations",
		proto.FakeDrain: "a test double",
	} {
		b.Reset()
		PrintTable(&b, []Impl{{Impl: im}})
		if want := fmt.Sprintf("  %-12s  %s", im, what); !strings.Contains(b.String(), want) {
			t.Errorf("the legend lacks %q:\n%s", want, b.String())
		}
	}
}

// A warning follows the comparison when the machine was saturated (busy
// above 90 % or steal above 10 %) or when its ratios rest on one run;
// none when neither is so.
func TestConsoleWarnings(t *testing.T) {
	for _, tc := range []struct {
		name        string
		res         []Impl
		want, avoid []string
	}{
		{"busy", fixture(0.97, 0.01), []string{"warning: the machine was saturated", "busy up to 97%"}, nil},
		{"steal", fixture(0.5, 0.15), []string{"warning: the machine was saturated", "steal up to 15%"}, nil},
		{"one run", fixture(0.5, 0.01), []string{"warning: each ratio to gozk rests on one run"}, []string{"saturated"}},
		{"quiet, alone", fixture(0.5, 0.01)[:1], nil, []string{"warning"}},
	} {
		var b bytes.Buffer
		PrintTable(&b, tc.res)
		out := b.String()
		for _, want := range tc.want {
			if !strings.Contains(out, want) {
				t.Errorf("%s: the output lacks %q:\n%s", tc.name, want, out)
			}
		}
		for _, avoid := range tc.avoid {
			if strings.Contains(out, avoid) {
				t.Errorf("%s: the output says %q:\n%s", tc.name, avoid, out)
			}
		}
	}
}
