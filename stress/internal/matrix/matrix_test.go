package matrix

import (
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/stress/internal/cells"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/results"
	"github.com/tierlock/tierlock/stress/internal/runner"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Every implementation runs first in some cell, and in each repetition of
// a cell in another place: no implementation always meets the load that
// the first (or the one after the baseline) meets.
func TestOrderRotates(t *testing.T) {
	impls := []proto.Impl{proto.Tier, proto.TierHandoff, proto.Gozk}
	spec, err := cells.Preset("full")
	if err != nil {
		t.Fatal(err)
	}
	// Along every row and down every column of the grid (a heat map's),
	// strict mode runs in every position: rotated by the cell's index, it
	// always ran last in the column "1 path, hold 1 ms" (6 columns, 3
	// implementations).
	rows, cols := map[int]map[int]bool{}, map[int]map[int]bool{}
	for _, c := range spec.Cells() {
		if c.Topology != cells.Standalone {
			continue
		}
		row, col := spec.Place(c)
		if row < 0 || col < 0 {
			t.Fatalf("cell %s not placed", c.Key())
		}
		o := orderFor(impls, row, col, c.Rep)
		if len(o) != 3 || !slices.Contains(o, proto.Gozk) || !slices.Contains(o, proto.TierHandoff) {
			t.Fatalf("order %v", o)
		}
		pos := slices.Index(o, proto.Tier)
		seenAt(rows, row)[pos] = true
		seenAt(cols, col)[pos] = true
	}
	for name, m := range map[string]map[int]map[int]bool{"row": rows, "column": cols} {
		for k, seen := range m {
			if len(seen) != 3 {
				t.Errorf("%s %d: strict ran only in positions %v", name, k, seen)
			}
		}
	}
	if slices.Equal(orderFor(impls, 1, 4, 0), orderFor(impls, 1, 4, 1)) {
		t.Error("two repetitions of a cell ran in the same order")
	}
	if orderFor(nil, 1, 1, 1) != nil {
		t.Error("no implementations: an order")
	}
	if r, c := spec.Place(cells.Cell{Procs: 2, Goroutines: 8, Paths: 1}); r != -1 || c != -1 {
		t.Errorf("a cell off the grid placed at %d, %d", r, c)
	}
}

// seenAt returns m's set for k, made on first use.
func seenAt(m map[int]map[int]bool, k int) map[int]bool {
	if m[k] == nil {
		m[k] = map[int]bool{}
	}
	return m[k]
}

func fig(im proto.Impl, perSec, p99 float64) Figures {
	return Figures{Impl: im, PerSec: perSec, P99US: p99, OK: true, Acquisitions: int64(perSec), Holds: 10}
}

// fulls is what results.FiguresOf would have made of fs, as far as
// compare reads it.
func fulls(fs []Figures) []results.Impl {
	out := make([]results.Impl, len(fs))
	for i, f := range fs {
		out[i] = results.Impl{Impl: f.Impl, PerSec: f.PerSec}
	}
	return out
}

func cell(rep int) cells.Cell {
	return cells.Cell{Topology: cells.Standalone, Procs: 2, Goroutines: 8, Paths: 1, Rep: rep}
}

// Ratios are per run; a point's figure is the median of its runs (the mean
// of the middle two for an even count), with the range of the ratio; a
// failed run marks the point failed whatever the median.
func TestPointsMedian(t *testing.T) {
	spec := cells.Spec{Topologies: []cells.Topology{cells.Standalone}, Procs: []int{2}, Goroutines: []int{8}, Paths: []int{1},
		Holds: []time.Duration{0}, Duration: time.Second, Repeat: 4}
	impls := []proto.Impl{proto.Tier, proto.Gozk}
	var rs []Result
	for rep, pair := range [][2]float64{{300, 400}, {500, 250}, {400, 400}, {390, 300}} {
		fs := []Figures{fig(proto.Tier, pair[0], 100), fig(proto.Gozk, pair[1], 50)}
		compare(fs, fulls(fs))
		rs = append(rs, Result{Cell: cell(rep), Key: cell(rep).Key(), Order: impls, Impls: fs})
	}
	rs = append(rs, Result{Cell: cell(0), Key: "x", Error: "could not start"}) // left out
	ps := points(spec, impls, rs)
	if len(ps) != 1 || ps[0].Runs != 4 || len(ps[0].Impls) != 2 {
		t.Fatalf("points %+v", ps)
	}
	tier := ps[0].Impls[0]
	// Ratios 0.75, 2, 1, 1.3: median (1 + 1.3) / 2.
	if math.Abs(tier.Ratio-1.15) > 1e-9 || tier.RatioMin != 0.75 || tier.RatioMax != 2 {
		t.Errorf("ratio %v (%v–%v), want 1.15 (0.75–2)", tier.Ratio, tier.RatioMin, tier.RatioMax)
	}
	if tier.PerSec != 395 || tier.P99Ratio != 2 || tier.Acquisitions != 1590 || !tier.OK {
		t.Errorf("tier point %+v", tier)
	}
	if tier.Host != nil {
		t.Errorf("machine figures without any run's: %+v", tier.Host)
	}
	// The machine's figures: the median of the runs that have them.
	for i, steal := range []float64{0.3, 0.1, 0.2} {
		rs[i].Impls[0].Host = &runner.HostCPU{Busy: 0.9, Steal: steal}
	}
	if h := points(spec, impls, rs)[0].Impls[0].Host; h == nil || h.Busy != 0.9 || h.Steal != 0.2 {
		t.Errorf("machine figures %+v; want busy 0.9, steal 0.2", h)
	} else if got := results.HostText(h); got != "90% / 20%" {
		t.Errorf("HostText = %q", got)
	}
	if got := results.HostText(nil); got != "n/a" {
		t.Errorf("HostText(nil) = %q", got)
	}
	// The peaks: the largest a run sampled; n/a (-1) where no run sampled
	// any (redsync's Redis keys: it showed 0 znodes and 0 watches).
	for i := range rs[:4] {
		rs[i].Impls[0].PeakZnodes, rs[i].Impls[0].PeakWatches, rs[i].Impls[0].SumPeakWatches = i, i, 2*i
		rs[i].Impls[1].PeakZnodes, rs[i].Impls[1].PeakWatches, rs[i].Impls[1].SumPeakWatches = -1, -1, -1
	}
	p := points(spec, impls, rs)[0]
	if a, b := p.Impls[0], p.Impls[1]; a.PeakZnodes != 3 || a.PeakWatches != 3 || a.SumPeakWatches != 6 ||
		b.PeakZnodes != -1 || b.PeakWatches != -1 || b.SumPeakWatches != -1 {
		t.Errorf("peaks %d/%d/%d and %d/%d/%d; want 3/3/6 and n/a (-1)", a.PeakZnodes, a.PeakWatches, a.SumPeakWatches,
			b.PeakZnodes, b.PeakWatches, b.SumPeakWatches)
	}
	rs[1].Impls[0].OK, rs[1].Impls[0].Verdict = false, "mutual exclusion violated"
	if p := points(spec, impls, rs)[0].Impls[0]; p.OK || p.Verdict != "mutual exclusion violated" {
		t.Errorf("a failed run left the point %+v", p)
	}
}

func TestSpreadAndCompare(t *testing.T) {
	if lo, hi := spread([]int64{5, 10, 15}); lo != 0.5 || hi != 1.5 {
		t.Errorf("spread %v %v", lo, hi)
	}
	if lo, hi := spread([]int64{0, 0}); lo != 0 || hi != 0 {
		t.Errorf("spread of nothing %v %v", lo, hi)
	}
	fs := []Figures{fig(proto.Tier, 100, 10)}
	compare(fs, fulls(fs)) // no baseline: no ratio
	if fs[0].Ratio != 0 || fs[0].P99Ratio != 0 {
		t.Errorf("ratio without a baseline: %v, %v", fs[0].Ratio, fs[0].P99Ratio)
	}
}

// A resumed matrix takes over only cells run the same way.
func TestCompatible(t *testing.T) {
	base := runner.Config{HoldMode: "sleep", HandoffMax: 64, HandoffMaxHold: 50 * time.Millisecond, SessionTimeout: 4 * time.Second}
	cur := &Summary{Impls: []proto.Impl{proto.Tier, proto.Gozk}, Spec: cells.Spec{Duration: time.Second}, Base: base}
	same := *cur
	if why := same.compatible(cur); why != "" {
		t.Errorf("same settings refused: %s", why)
	}
	for _, change := range []func(s *Summary){
		func(s *Summary) { s.Impls = []proto.Impl{proto.Tier} },
		func(s *Summary) { s.Spec.Duration = 2 * time.Second },
		func(s *Summary) { s.Spec.RunWarmup = time.Second },
		func(s *Summary) { s.Base.HoldMode = "spin" },
		func(s *Summary) { s.Base.HandoffMax = 8 },
	} {
		prev := *cur
		change(&prev)
		if prev.compatible(cur) == "" {
			t.Errorf("incompatible file accepted: %+v", prev)
		}
	}
}

// The report's heat maps: one per topology and implementation but the
// baseline, every row and column of the plan, grey where a cell has not
// run, FAIL where a check failed.
func TestReportData(t *testing.T) {
	spec := cells.Spec{Preset: "test", Topologies: []cells.Topology{cells.Standalone}, Procs: []int{2, 4}, Goroutines: []int{8},
		Paths: []int{1}, Holds: []time.Duration{0, time.Millisecond}, Duration: time.Second, Repeat: 1}
	impls := []proto.Impl{proto.Tier, proto.TierHandoff, proto.Gozk}
	fs := []Figures{fig(proto.Tier, 200, 10), fig(proto.TierHandoff, 5000, 10), fig(proto.Gozk, 100, 10)}
	fs[1].OK, fs[1].Verdict, fs[1].Errors = false, "lock lost", 4
	compare(fs, fulls(fs))
	s := &Summary{Spec: spec, Impls: impls, Results: []Result{{Cell: cell(0), Key: cell(0).Key(), Order: impls, Impls: fs}}}
	s.finish(len(spec.Cells()), false)
	if s.Complete || s.OK || !s.violated() {
		t.Fatalf("complete %v, ok %v", s.Complete, s.OK)
	}
	d := reportData(s)
	if len(d.Maps) != 2 || d.Progress != "1 of 4 cells" {
		t.Fatalf("%d maps, progress %q", len(d.Maps), d.Progress)
	}
	m := d.Maps[0]
	if !slices.Equal(m.Rows, []string{"2×8", "4×8"}) || !slices.Equal(m.Cols, []string{"1 path, hold 0", "1 path, hold 1ms"}) {
		t.Errorf("rows %q, cols %q", m.Rows, m.Cols)
	}
	if m.Values[0][0] != 2 || !math.IsNaN(m.Values[1][1]) {
		t.Errorf("values %v", m.Values)
	}
	if d.Maps[1].Labels[0][0] != "FAIL" {
		t.Errorf("failed cell labelled %q", d.Maps[1].Labels[0][0])
	}
	// The banner says what was found: no violation, and where the lock
	// errors were; amber, not red.
	want := "0 violation(s) in 30 holds checked; 1 of 4 cells had lock errors: standalone/p2/g8/l1/h0s/r0 tier-handoff 4 (lock lost); " +
		"INCOMPLETE: 1 of 4 cells ran"
	if got := verdict(s); got != want || d.Violated {
		t.Errorf("verdict %q (violated %v), want %q", got, d.Violated, want)
	}
	s.Results[0].Impls[0].OK, s.Results[0].Impls[0].Violations = false, 2
	s.finish(len(spec.Cells()), false)
	if got := verdict(s); !strings.HasPrefix(got, "FAIL: 2 violation(s) in 30 holds checked; 1 of 4 cells had lock errors") || !reportData(s).Violated {
		t.Errorf("with violations: verdict %q", got)
	}
	for _, m := range d.Maps {
		if _, err := m.SVG(); err != nil {
			t.Error(err)
		}
	}
}

// Resuming keeps the cells that ran to their end, failed checks included,
// and runs again those that could not run or were cut short; a missing
// file is a matrix not begun, a file of other settings or not a matrix's
// is refused.
func TestResume(t *testing.T) {
	impls := []proto.Impl{proto.Tier, proto.Gozk}
	spec := cells.Spec{Duration: time.Second}
	fresh := func() *Summary { return &Summary{Impls: impls, Spec: spec} }
	dir := t.TempDir()
	path := filepath.Join(dir, "m.json")
	if done, err := fresh().resume(path); err != nil || len(done) != 0 {
		t.Fatalf("missing file: %v, %v", done, err)
	}
	failed := fig(proto.Tier, 1, 1)
	failed.OK = false
	cut := fig(proto.Gozk, 1, 1)
	cut.Interrupted = true
	prev := fresh()
	prev.Results = []Result{
		{Cell: cell(0), Key: "ran", Order: impls, Impls: []Figures{fig(proto.Tier, 1, 1), fig(proto.Gozk, 1, 1)}},
		{Cell: cell(1), Key: "failed", Order: impls, Impls: []Figures{failed, fig(proto.Gozk, 1, 1)}},
		{Cell: cell(2), Key: "error", Order: impls, Error: "could not start"},
		{Cell: cell(3), Key: "cut", Order: impls, Impls: []Figures{fig(proto.Tier, 1, 1), cut}},
		{Cell: cell(4), Key: "half", Order: impls, Impls: []Figures{fig(proto.Tier, 1, 1)}},
	}
	prev.Base.JSON = path
	prev.save(io.Discard)
	s := fresh()
	done, err := s.resume(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 2 || !done["ran"] || !done["failed"] || len(s.Results) != 2 {
		t.Fatalf("kept %v (%d results), want ran and failed", done, len(s.Results))
	}
	other := fresh()
	other.Spec.Duration = 5 * time.Second
	if _, err := other.resume(path); err == nil || !strings.Contains(err.Error(), "ran 1s each") {
		t.Errorf("a file of 1s runs taken into a 5s matrix: %v", err)
	}
	if err := os.WriteFile(path, []byte("<html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh().resume(path); err == nil {
		t.Error("a file that is not a matrix's was taken")
	}
}
