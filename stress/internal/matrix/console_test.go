package matrix

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tierlock/tierlock/stress/internal/cells"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/runner"
)

// wideMatrix is a matrix of two points with figures of their widest kind:
// one run on a saturated machine (8 × 1000 on 1000 paths, a failed check),
// and three runs on a quiet one.
func wideMatrix() *Summary {
	spec := cells.Spec{Preset: "test", Topologies: []cells.Topology{cells.Ensemble}, Procs: []int{8}, Goroutines: []int{1000},
		Paths: []int{1000}, Holds: []time.Duration{time.Millisecond}, Duration: time.Second, Repeat: 1}
	impls := []proto.Impl{proto.Tier, proto.TierHandoff, proto.Gozk}
	wide := func(im proto.Impl, perSec float64, host runner.HostCPU) Figures {
		f := fig(im, perSec, 1234567)
		f.P50US, f.RequestsPerAcq, f.ClientCPUUS, f.ServerCPUUS, f.PeakGoroutines = 123456, 19.01, 12345, 2345, 1234
		f.OpsPerAcq = map[string]float64{"create": 1.01, "multi": 1, "delete": 0.01, "getChildren": 14.5, "getData": 1, "exists": 0.2, "sync": 0.01}
		f.Lease, f.LeaseWaits, f.LeaseLapses, f.TimeoutMs = im != proto.Gozk, 12345, 0, 10000
		f.HoldsAfter, f.Abandoned, f.PeakZnodes, f.PeakWatches, f.SumPeakWatches = 12345, 7999, 8, 7, 7000
		f.JainGoroutines, f.MinShare, f.MaxShare, f.OfChain, f.Host = 0.987, 0.01, 12.34, 1.23, &host
		return f
	}
	point := func(c cells.Cell, host runner.HostCPU) Result {
		fs := []Figures{wide(proto.Tier, 4321, host), wide(proto.TierHandoff, 123456, host), wide(proto.Gozk, 1234, host)}
		compare(fs, fulls(fs))
		return Result{Cell: c, Key: c.Key(), Order: impls, Impls: fs}
	}
	big := cells.Cell{Topology: cells.Ensemble, Procs: 8, Goroutines: 1000, Paths: 1000, Hold: time.Millisecond}
	s := &Summary{Spec: spec, Impls: impls, Results: []Result{point(big, runner.HostCPU{Busy: 0.99, Steal: 0.28})}}
	s.Results[0].Impls[0].OK = false
	s.Results[0].Impls[0].Verdict = "zklock: lock lost: zklock: connection to ZooKeeper lost while the hold waited for its lease to be confirmed"
	small := cells.Cell{Topology: cells.Ensemble, Procs: 2, Goroutines: 8, Paths: 1}
	for rep := range 3 {
		small.Rep = rep
		s.Results = append(s.Results, point(small, runner.HostCPU{Busy: 0.5, Steal: 0.02}))
	}
	s.Spec.Procs, s.Spec.Goroutines, s.Spec.Paths = []int{2, 8}, []int{8, 1000}, []int{1, 1000}
	s.Spec.Holds, s.Spec.Repeat = []time.Duration{0, time.Millisecond}, 3
	s.finish(len(s.Spec.Cells()), false)
	return s
}

// The matrix's console table is at most 120 columns wide, every column
// still shown; a legend names the implementations, and warnings say that
// a point rests on one run and that the machine was saturated.
func TestConsoleTable(t *testing.T) {
	s := wideMatrix()
	var b bytes.Buffer
	printTable(&b, s)
	out, _, ok := strings.Cut(b.String(), verdict(s))
	if !ok {
		t.Fatalf("no verdict:\n%s", b.String())
	}
	for i, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > 120 {
			t.Errorf("line %d is %d columns wide, more than 120:\n%s", i+1, n, line)
		}
	}
	for _, want := range append(append([]string{}, tableHeader...),
		"8×1000", "tier-handoff", "3.50–3.50", "100.05×", "12.34", "99% / 28%", "confirmed", "7999",
		"tier          tierlock's two-tier lock (what you use: tier.Lock)",
		"gozk          go-zookeeper's zk.Lock, one per goroutine (the baseline)",
		"warning: 1 of 2 points rest on one run",
		"warning: the machine was saturated",
	) {
		if !strings.Contains(out, want) {
			t.Errorf("the console output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("the console output:\n%s", b.String())
	}
}
