package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/tierlock/tierlock/stress/internal/check"
	"github.com/tierlock/tierlock/stress/internal/figures"
)

// implResult is the figures of one implementation, as printed and written
// to JSON.
type implResult struct {
	Impl         string  `json:"impl"`
	Procs        int     `json:"procs"`
	Goroutines   int     `json:"goroutines"`
	Paths        int     `json:"paths"`
	Acquisitions int64   `json:"acquisitions"`
	ElapsedSec   float64 `json:"elapsed_s"`
	PerSec       float64 `json:"acquisitions_per_s"`
	// Acquire latency: from the call to Acquire to its return, in µs.
	LatencyUS  figures.Latency `json:"acquire_latency_us"`
	HoldMeanUS float64         `json:"hold_mean_us"`
	// ZooKeeper requests received by the servers during the run (the
	// sampler's own subtracted), and per acquisition; -1 when a server
	// restarted during the run (its counters started again).
	ZKRequests     int64   `json:"zk_requests"`
	RequestsPerAcq float64 `json:"zk_requests_per_acquisition"`
	// Peak children and watches of each lock path; -1: not measurable.
	PeakZnodesPerPath  []int `json:"peak_znodes_per_path"`
	PeakWatchesPerPath []int `json:"peak_watches_per_path"`
	PeakZnodes         int   `json:"peak_znodes"`  // max over paths
	PeakWatches        int   `json:"peak_watches"` // max over paths
	// Shares of acquisitions and Jain's fairness index over them.
	ProcShares         []float64    `json:"proc_shares"`
	FairnessProcs      float64      `json:"fairness_procs"`
	FairnessGoroutines float64      `json:"fairness_goroutines"`
	GoroutinesIdle     int          `json:"goroutines_without_acquisition"`
	TokenKind          string       `json:"token_kind"` // zxid, seq, or "" (none)
	Check              check.Result `json:"check"`
	Errors             int64        `json:"errors"`
	ErrorSamples       []string     `json:"error_samples,omitempty"`
	Interrupted        bool         `json:"interrupted,omitempty"`
	Overflow           bool         `json:"record_overflow,omitempty"`
	// Fault runs: holds that ended by a loss (their Release reported it),
	// worker sessions that expired, faults injected and recovered from.
	Losses          int64 `json:"holds_lost_to_faults"`
	SessionExpiries int64 `json:"session_expiries"`
	FaultsInjected  int   `json:"faults_injected"`
	FaultsRecovered int   `json:"faults_recovered"`
	// Orphans are the ephemeral nodes left under the run's paths once every
	// worker exited and its session ended (none may be).
	Orphans []string `json:"orphans,omitempty"`
	// Ratios against the gozk baseline of the same run (0: no baseline).
	ThroughputVsGozk float64 `json:"throughput_vs_gozk,omitempty"`
	RequestsVsGozk   float64 `json:"requests_per_acquisition_vs_gozk,omitempty"`
}

// OK reports whether the run proved mutual exclusion, met no error, and
// recovered from every fault.
func (r implResult) OK() bool {
	return r.Check.OK() && r.Errors == 0 && !r.Overflow && r.FaultsRecovered == r.FaultsInjected && len(r.Orphans) == 0
}

// summary is the whole output of a stress run.
type summary struct {
	Started time.Time    `json:"started"`
	Config  config       `json:"config"`
	Servers []string     `json:"servers"`
	Local   bool         `json:"local_server"` // started by stress
	Results []implResult `json:"results"`
	// The fault log of every implementation's run (with -fault).
	Faults   []*faultEvent `json:"faults,omitempty"`
	OK       bool          `json:"ok"`
	Failures []string      `json:"failures,omitempty"`
}

// figuresOf computes the figures of a run.
func figuresOf(run *implRun, cfg config) implResult {
	r := implResult{
		Impl: run.name, Procs: cfg.Procs, Goroutines: cfg.Goroutines, Paths: cfg.Paths,
		ElapsedSec:        run.elapsed.Seconds(),
		ZKRequests:        run.requests,
		PeakZnodesPerPath: run.peakZnodes, PeakWatchesPerPath: run.peakWatches,
		TokenKind: run.tokenKind, Check: run.result,
		Errors: run.errors, ErrorSamples: run.errSamples,
		Interrupted: run.interrupted, Overflow: run.overflow,
		Orphans: run.orphans,
	}
	for _, n := range run.perProc {
		r.Acquisitions += n
	}
	if r.ElapsedSec > 0 {
		r.PerSec = float64(r.Acquisitions) / r.ElapsedSec
	}
	r.LatencyUS = figures.Summarize(slices.Clone(run.latencies))
	if len(run.holdTimes) > 0 {
		var sum float64
		for _, d := range run.holdTimes {
			sum += float64(d)
		}
		r.HoldMeanUS = sum / float64(len(run.holdTimes)) / 1e3
	}
	switch {
	case r.ZKRequests < 0:
		r.RequestsPerAcq = -1
	case r.Acquisitions > 0:
		r.RequestsPerAcq = float64(r.ZKRequests) / float64(r.Acquisitions)
	}
	r.Losses, r.SessionExpiries = run.losses, run.expiries
	for _, ev := range run.faults {
		r.FaultsInjected++
		if ev.Recovered && ev.Failure == "" {
			r.FaultsRecovered++
		}
	}
	r.PeakZnodes = slices.Max(append([]int{0}, run.peakZnodes...))
	r.PeakWatches = slices.Max(append([]int{-1}, run.peakWatches...))
	r.ProcShares = figures.Shares(run.perProc)
	r.FairnessProcs = figures.Jain(run.perProc)
	r.FairnessGoroutines = figures.Jain(run.perG)
	for _, n := range run.perG {
		if n == 0 {
			r.GoroutinesIdle++
		}
	}
	return r
}

// compare fills in the ratios against the gozk baseline.
func compare(results []implResult) {
	i := slices.IndexFunc(results, func(r implResult) bool { return r.Impl == implGozk })
	if i < 0 {
		return
	}
	base := results[i]
	for j := range results {
		if base.PerSec > 0 {
			results[j].ThroughputVsGozk = results[j].PerSec / base.PerSec
		}
		if base.RequestsPerAcq > 0 && results[j].RequestsPerAcq >= 0 {
			results[j].RequestsVsGozk = results[j].RequestsPerAcq / base.RequestsPerAcq
		}
	}
}

// failures lists why a run did not pass.
func failures(results []implResult) []string {
	var out []string
	for _, r := range results {
		c := r.Check
		if !c.OK() {
			out = append(out, fmt.Sprintf("%s: %d overlap(s), %d token violation(s), %d lost hold(s), %d grant(s) before the loser saw its loss in %d holds",
				r.Impl, c.Overlaps, c.TokenRegressions, c.Lost, c.LateLosses, c.Holds))
			if c.Cut > 0 {
				out[len(out)-1] += fmt.Sprintf(" (and %d hold(s) of killed workers, cut at the kill: not violations)", c.Cut)
			}
			for _, ex := range c.Examples[:min(len(c.Examples), 3)] {
				prev := ""
				if ex.Prev != nil {
					prev = fmt.Sprintf(" after %v", *ex.Prev)
				}
				out = append(out, fmt.Sprintf("  %s on path %d: %v%s: %s", ex.Kind, ex.Path, ex.Hold, prev, ex.Detail))
			}
		}
		if r.Errors > 0 {
			out = append(out, fmt.Sprintf("%s: %d lock error(s), e.g. %q", r.Impl, r.Errors, r.ErrorSamples))
		}
		if len(r.Orphans) > 0 {
			out = append(out, fmt.Sprintf("%s: %d orphan node(s) once every session ended, e.g. %v", r.Impl, len(r.Orphans), r.Orphans[:min(len(r.Orphans), 3)]))
		}
		if r.Overflow {
			out = append(out, fmt.Sprintf("%s: a worker's record file filled up; the run was cut short", r.Impl))
		}
	}
	return out
}

// faultFailures lists the faults that failed: not recovered from, or their
// holder did not see its hold lost.
func faultFailures(events []*faultEvent) []string {
	var out []string
	for _, ev := range events {
		if ev.Failure != "" {
			out = append(out, fmt.Sprintf("%s: fault %d (%s, %s, %s): %s", ev.Impl, ev.N, ev.Kind, ev.Variant, ev.Target, ev.Failure))
		}
	}
	return out
}

func writeJSON(path string, s summary) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
