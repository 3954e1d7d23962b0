package matrix

import (
	"slices"
	"time"

	"github.com/tierlock/tierlock/stress/internal/cells"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/results"
	"github.com/tierlock/tierlock/stress/internal/runner"
)

// Figures are one implementation's figures in one cell.
type Figures struct {
	Impl         proto.Impl `json:"impl"`
	Acquisitions int64      `json:"acquisitions"`
	PerSec       float64    `json:"acquisitions_per_s"`
	P50US        float64    `json:"acquire_p50_us"`
	P99US        float64    `json:"acquire_p99_us"`
	// Requests the servers received per acquisition (pings included; -1:
	// not measurable), and the peak znodes and watches sampled under one
	// lock path (the most loaded) and summed over the paths' peaks.
	RequestsPerAcq float64 `json:"zk_requests_per_acquisition"`
	PeakZnodes     int     `json:"peak_znodes_per_path"`
	PeakWatches    int     `json:"peak_watches_per_path"`
	SumPeakWatches int     `json:"sum_peak_watches"`
	// Fairness: Jain's index over goroutines and over processes (1: equal
	// shares), and the least and most acquisitions of one goroutine over
	// their mean.
	JainGoroutines float64 `json:"fairness_goroutines"`
	JainProcs      float64 `json:"fairness_procs"`
	MinShare       float64 `json:"min_goroutine_share"`
	MaxShare       float64 `json:"max_goroutine_share"`
	// Counted inside the measured window: the processor time per
	// acquisition of the workers and of the servers in µs (-1: unknown),
	// the most goroutines of one worker process, the requests the workers
	// wrote per acquisition by kind (nil: not counted), the lease's waits
	// and lapses (implementations on a zklock.Session), and the session
	// timeout the servers granted (ms; the least of the workers').
	ClientCPUUS    float64            `json:"client_cpu_per_acquisition_us"`
	ServerCPUUS    float64            `json:"server_cpu_per_acquisition_us"`
	PeakGoroutines int                `json:"peak_goroutines_per_process"`
	OpsPerAcq      map[string]float64 `json:"client_requests_per_acquisition,omitempty"`
	Lease          bool               `json:"lease"`
	LeaseWaits     int64              `json:"lease_waits"`
	LeaseLapses    int64              `json:"lease_lapses"`
	TimeoutMs      int64              `json:"negotiated_session_timeout_ms"`
	// Host is how the machine's processors were spent inside the window:
	// busy, and stolen by a hypervisor (nil: unknown).
	Host *runner.HostCPU `json:"host_cpu,omitempty"`
	// Around the window: holds entered after it (a drain) and waits
	// abandoned at the deadline; and every hold the checker checked.
	HoldsAfter int64 `json:"holds_after_window"`
	Abandoned  int64 `json:"abandoned_at_deadline"`
	Holds      int   `json:"holds_checked"`
	// The limits probed right after the run (0: not probed) and the
	// throughput over each.
	ChainPerSec float64 `json:"handoff_chain_per_s,omitempty"`
	PairsPerSec float64 `json:"create_delete_pairs_per_s,omitempty"`
	OfChain     float64 `json:"throughput_of_chain,omitempty"`
	OfPairs     float64 `json:"throughput_of_pairs,omitempty"`
	// Errors counts lock errors (failed acquisitions and releases).
	Errors int64 `json:"errors"`
	// Throughput and p99 acquire latency over the baseline's in the same
	// cell (0: no baseline).
	Ratio    float64 `json:"throughput_vs_gozk,omitempty"`
	P99Ratio float64 `json:"p99_vs_gozk,omitempty"`
	// The checker's verdict. Interrupted: the run was cut short (by a
	// signal, or -timeout), a cell to run again rather than a finding.
	Interrupted bool   `json:"interrupted,omitempty"`
	OK          bool   `json:"ok"`
	Verdict     string `json:"verdict,omitempty"` // why not OK
	Violations  int    `json:"violations"`
}

// Result is one cell's run: every implementation, in the order they ran.
type Result struct {
	Cell    cells.Cell   `json:"cell"`
	Key     string       `json:"key"`
	Order   []proto.Impl `json:"order"`
	Started time.Time    `json:"started"`
	Seconds float64      `json:"seconds"` // the whole cell, set-up included
	Leader  int          `json:"leader"`  // ensemble: the leader's index (-1: standalone or unknown)
	Impls   []Figures    `json:"impls"`
	Error   string       `json:"error,omitempty"` // the cell could not be run
}

// OK reports whether the cell ran and every implementation passed the
// checker.
func (r Result) OK() bool {
	if r.Error != "" {
		return false
	}
	for _, f := range r.Impls {
		if !f.OK {
			return false
		}
	}
	return true
}

// figuresOf reduces a run's figures (results.FiguresOf) to the matrix's.
func figuresOf(run *runner.Run, full results.Impl) Figures {
	f := Figures{
		Impl: run.Name, Acquisitions: full.Acquisitions, PerSec: full.PerSec,
		P50US: full.LatencyUS.P50, P99US: full.LatencyUS.P99,
		RequestsPerAcq: full.RequestsPerAcq, PeakZnodes: full.PeakZnodes, PeakWatches: full.PeakWatches,
		JainGoroutines: full.FairnessGoroutines, JainProcs: full.FairnessProcs,
		OK: full.OK(), Violations: full.Check.Violations(), Interrupted: run.Interrupted,
	}
	c := full.Cost
	f.ClientCPUUS, f.ServerCPUUS, f.PeakGoroutines = c.ClientCPUPerAcqUS, c.ServerCPUPerAcqUS, c.PeakGoroutines
	f.OpsPerAcq, f.Lease, f.LeaseWaits, f.LeaseLapses = c.ClientOpsPerAcq, c.Lease, c.LeaseWaits, c.LeaseLapses
	f.TimeoutMs, f.Host = c.TimeoutMinMs, c.Host
	f.HoldsAfter, f.Abandoned, f.Holds, f.Errors = c.HoldsAfter, c.Abandoned, full.Check.Holds, full.Errors
	if l := c.Limits; l != nil && l.Err == "" {
		f.ChainPerSec, f.PairsPerSec, f.OfChain, f.OfPairs = l.Chains, l.Pairs, c.OfChain, c.OfPairs
	}
	if len(run.PeakWatches) == 0 {
		f.SumPeakWatches = -1 // no path sampled (redsync's Redis keys): n/a
	}
	for _, w := range run.PeakWatches {
		f.SumPeakWatches += max(w, 0)
	}
	f.MinShare, f.MaxShare = spread(run.PerG)
	if !f.OK {
		f.Verdict = verdictOf(full)
	}
	return f
}

// spread returns the smallest and largest count over their mean.
func spread(counts []int64) (lo, hi float64) {
	if len(counts) == 0 {
		return 0, 0
	}
	var sum int64
	for _, n := range counts {
		sum += n
	}
	if sum == 0 {
		return 0, 0
	}
	mean := float64(sum) / float64(len(counts))
	return float64(slices.Min(counts)) / mean, float64(slices.Max(counts)) / mean
}

// verdictOf says in a line why an implementation's run failed.
func verdictOf(r results.Impl) string {
	switch {
	case r.Check.Violations() > 0:
		return "mutual exclusion violated"
	case r.Errors > 0:
		if len(r.ErrorSamples) > 0 {
			return r.ErrorSamples[0]
		}
		return "lock errors"
	case r.Overflow:
		return "record overflow"
	case len(r.Orphans) > 0:
		return "orphan nodes left"
	case r.Interrupted:
		return "interrupted"
	}
	return "failed"
}

// compare sets the ratios of a cell's figures against the baseline's:
// throughput as results.Compare has it, and the p99 acquire latency.
func compare(fs []Figures, full []results.Impl) {
	results.Compare(full)
	base := slices.IndexFunc(fs, func(f Figures) bool { return f.Impl == proto.Gozk })
	for k := range fs {
		fs[k].Ratio = full[k].ThroughputVsGozk
		if base >= 0 && fs[base].P99US > 0 {
			fs[k].P99Ratio = fs[k].P99US / fs[base].P99US
		}
	}
}

// Point is one cell's repetitions summarized per implementation: the
// median of each figure, and the lowest and highest throughput ratio.
type Point struct {
	Cell  cells.Cell   `json:"cell"` // Rep 0
	Runs  int          `json:"runs"`
	Impls []PointImpl  `json:"impls"`
	Order []proto.Impl `json:"-"`
}

// PointImpl is one implementation at one point.
type PointImpl struct {
	Figures
	RatioMin float64 `json:"throughput_vs_gozk_min,omitempty"`
	RatioMax float64 `json:"throughput_vs_gozk_max,omitempty"`
}

// points summarizes the results that ran (errors left out), in the order
// of the spec's cells.
func points(spec cells.Spec, impls []proto.Impl, rs []Result) []Point {
	by := map[string][]Result{}
	for _, r := range rs {
		if r.Error == "" {
			by[r.Cell.Point()] = append(by[r.Cell.Point()], r)
		}
	}
	var out []Point
	for _, c := range spec.Cells() {
		if c.Rep != 0 || len(by[c.Point()]) == 0 {
			continue
		}
		runs := by[c.Point()]
		p := Point{Cell: c, Runs: len(runs)}
		for _, im := range impls {
			var fs []Figures
			for _, r := range runs {
				if i := slices.IndexFunc(r.Impls, func(f Figures) bool { return f.Impl == im }); i >= 0 {
					fs = append(fs, r.Impls[i])
				}
			}
			if len(fs) == 0 {
				continue
			}
			p.Impls = append(p.Impls, median(fs))
		}
		out = append(out, p)
	}
	return out
}

// median is the figure-wise median of fs (the mean of the middle two of
// an even count), failures and violations summed, and the range of the
// ratio.
func median(fs []Figures) PointImpl {
	pick := func(get func(Figures) float64) float64 {
		v := make([]float64, len(fs))
		for i, f := range fs {
			v[i] = get(f)
		}
		return medianOf(v)
	}
	m := PointImpl{Figures: Figures{Impl: fs[0].Impl, OK: true}}
	m.PerSec = pick(func(f Figures) float64 { return f.PerSec })
	m.P50US = pick(func(f Figures) float64 { return f.P50US })
	m.P99US = pick(func(f Figures) float64 { return f.P99US })
	m.RequestsPerAcq = pick(func(f Figures) float64 { return f.RequestsPerAcq })
	m.JainGoroutines = pick(func(f Figures) float64 { return f.JainGoroutines })
	m.JainProcs = pick(func(f Figures) float64 { return f.JainProcs })
	m.MinShare = pick(func(f Figures) float64 { return f.MinShare })
	m.MaxShare = pick(func(f Figures) float64 { return f.MaxShare })
	m.Ratio = pick(func(f Figures) float64 { return f.Ratio })
	m.P99Ratio = pick(func(f Figures) float64 { return f.P99Ratio })
	m.ClientCPUUS = pick(func(f Figures) float64 { return f.ClientCPUUS })
	m.ServerCPUUS = pick(func(f Figures) float64 { return f.ServerCPUUS })
	m.ChainPerSec = pick(func(f Figures) float64 { return f.ChainPerSec })
	m.PairsPerSec = pick(func(f Figures) float64 { return f.PairsPerSec })
	m.OfChain = pick(func(f Figures) float64 { return f.OfChain })
	m.OfPairs = pick(func(f Figures) float64 { return f.OfPairs })
	m.Host = medianHost(fs)
	if fs[0].OpsPerAcq != nil {
		m.OpsPerAcq = map[string]float64{}
		for k := range fs[0].OpsPerAcq {
			m.OpsPerAcq[k] = pick(func(f Figures) float64 { return f.OpsPerAcq[k] })
		}
	}
	m.TimeoutMs, m.PeakGoroutines, m.Lease = 0, -1, fs[0].Lease
	m.PeakZnodes, m.PeakWatches, m.SumPeakWatches = -1, -1, -1 // n/a unless a run sampled them
	m.RatioMin, m.RatioMax = fs[0].Ratio, fs[0].Ratio
	for _, f := range fs {
		m.sum(f)
		m.Acquisitions += f.Acquisitions
		m.PeakZnodes = max(m.PeakZnodes, f.PeakZnodes)
		m.PeakWatches = max(m.PeakWatches, f.PeakWatches)
		m.SumPeakWatches = max(m.SumPeakWatches, f.SumPeakWatches)
		m.RatioMin, m.RatioMax = min(m.RatioMin, f.Ratio), max(m.RatioMax, f.Ratio)
		m.Violations += f.Violations
		if !f.OK {
			m.OK, m.Verdict = false, f.Verdict
		}
	}
	return m
}

// sum adds the counts of f that add up over repetitions, and keeps the
// largest peak and the least negotiated timeout.
func (m *PointImpl) sum(f Figures) {
	m.LeaseWaits += f.LeaseWaits
	m.LeaseLapses += f.LeaseLapses
	m.HoldsAfter += f.HoldsAfter
	m.Abandoned += f.Abandoned
	m.Holds += f.Holds
	m.Errors += f.Errors
	m.PeakGoroutines = max(m.PeakGoroutines, f.PeakGoroutines)
	if f.TimeoutMs > 0 && (m.TimeoutMs == 0 || f.TimeoutMs < m.TimeoutMs) {
		m.TimeoutMs = f.TimeoutMs
	}
}

// medianHost is the median of the runs' machine figures that are known
// (nil: none is).
func medianHost(fs []Figures) *runner.HostCPU {
	var busy, steal []float64
	for _, f := range fs {
		if f.Host != nil {
			busy, steal = append(busy, f.Host.Busy), append(steal, f.Host.Steal)
		}
	}
	if len(busy) == 0 {
		return nil
	}
	return &runner.HostCPU{Busy: medianOf(busy), Steal: medianOf(steal)}
}

// medianOf is the median of v (the mean of the middle two of an even
// count); it sorts v.
func medianOf(v []float64) float64 {
	slices.Sort(v)
	if len(v)%2 == 0 {
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return v[len(v)/2]
}
