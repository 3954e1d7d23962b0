// Package results turns the raw runs of the stress command into its
// output: the figures of each implementation (also as JSON), the verdict,
// the aligned table and fault log on stdout, a mixed run's breakdown, and
// the data of the HTML report (internal/report).
package results

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/internal/linear"
	"github.com/tierlock/tierlock/stress/internal/fault"
	"github.com/tierlock/tierlock/stress/internal/figures"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/runner"
)

// Impl is the figures of one implementation, as printed and written
// to JSON.
type Impl struct {
	Impl       proto.Impl `json:"impl"`
	Procs      int        `json:"procs"`
	Goroutines int        `json:"goroutines"`
	Paths      int        `json:"paths"`
	// Acquisitions are the holds entered inside the measured window, and
	// PerSec those over the window's length (Cost.WindowSec); ElapsedSec
	// is the whole run, warm-up and the end after the deadline included.
	Acquisitions int64   `json:"acquisitions"`
	ElapsedSec   float64 `json:"elapsed_s"`
	PerSec       float64 `json:"acquisitions_per_s"`
	// Acquire latency: from the call to Acquire to its return, in µs.
	LatencyUS  figures.Latency `json:"acquire_latency_us"`
	HoldMeanUS float64         `json:"hold_mean_us"`
	// ZooKeeper requests received by the servers inside the window (the
	// sampler's own subtracted), and per acquisition; -1 when a server
	// restarted during the run (its counters started again) or did not
	// answer.
	ZKRequests     int64   `json:"zk_requests"`
	RequestsPerAcq float64 `json:"zk_requests_per_acquisition"`
	// Peak children and watches of each lock path; -1: not measurable.
	PeakZnodesPerPath  []int `json:"peak_znodes_per_path"`
	PeakWatchesPerPath []int `json:"peak_watches_per_path"`
	PeakZnodes         int   `json:"peak_znodes"`  // max over paths
	PeakWatches        int   `json:"peak_watches"` // max over paths
	// Shares of acquisitions and Jain's fairness index over them.
	ProcShares         []float64        `json:"proc_shares"`
	FairnessProcs      float64          `json:"fairness_procs"`
	FairnessGoroutines float64          `json:"fairness_goroutines"`
	GoroutinesIdle     int              `json:"goroutines_without_acquisition"`
	TokenKind          string           `json:"token_kind"` // zxid, seq, or "" (none)
	Check              exclusion.Result `json:"check"`
	Porcupine          *linear.Result   `json:"porcupine,omitempty"` // the same holds and the fenced writes through Porcupine (internal/linear)
	Errors             int64            `json:"errors"`
	ErrorSamples       []string         `json:"error_samples,omitempty"`
	Interrupted        bool             `json:"interrupted,omitempty"`
	Overflow           bool             `json:"record_overflow,omitempty"`
	// Fault runs: holds that ended by a loss (their Release reported it),
	// worker sessions that expired, faults injected and recovered from.
	Losses          int64 `json:"holds_lost_to_faults"`
	SessionExpiries int64 `json:"session_expiries"`
	FaultsInjected  int   `json:"faults_injected"`
	FaultsRecovered int   `json:"faults_recovered"`
	// FaultsByKind counts the faults injected, by kind.
	FaultsByKind map[fault.Kind]int `json:"faults_by_kind,omitempty"`
	// Writes is the check of what the holds wrote to the guarded
	// resources (fault runs with -writes): no write of a stale holder may
	// have landed after a later holder's.
	Writes *runner.WritesCheck `json:"writes,omitempty"`
	// Orphans are the ephemeral nodes left under the run's paths once every
	// worker exited and its session ended (none may be).
	Orphans []string `json:"orphans,omitempty"`
	// The recipe run (mutex, rw, semaphore) and, for rw and semaphore,
	// what it achieved.
	Recipe proto.Recipe `json:"recipe,omitempty"`
	RW     *RW          `json:"rw,omitempty"`
	Sem    *Sem         `json:"semaphore,omitempty"`
	// Cost is what the acquisitions cost inside the window (CPU, requests
	// by kind, goroutines, lease), the work done around it, the negotiated
	// session timeout, and the throughput against the probed limits.
	Cost Cost `json:"cost"`
	// Ratios against the gozk baseline of the same run (0: no baseline).
	ThroughputVsGozk float64 `json:"throughput_vs_gozk,omitempty"`
	RequestsVsGozk   float64 `json:"requests_per_acquisition_vs_gozk,omitempty"`
}

// OK reports whether the run proved mutual exclusion, met no error, and
// recovered from every fault.
func (r Impl) OK() bool {
	return r.Check.OK() && r.Errors == 0 && !r.Overflow && r.FaultsRecovered == r.FaultsInjected && len(r.Orphans) == 0 &&
		r.Writes.OK() && r.porcupineOK()
}

// Summary is the whole output of a stress run.
type Summary struct {
	Started time.Time     `json:"started"`
	Config  runner.Config `json:"config"`
	Servers []string      `json:"servers"`
	Local   bool          `json:"local_server"` // started by stress
	Results []Impl        `json:"results"`
	// The fault log of every implementation's run (with -fault).
	Faults   []*fault.Event `json:"faults,omitempty"`
	OK       bool           `json:"ok"`
	Failures []string       `json:"failures,omitempty"`
}

// FiguresOf computes the figures of a run.
func FiguresOf(run *runner.Run, cfg runner.Config) Impl {
	r := Impl{
		Impl: run.Name, Procs: cfg.Procs, Goroutines: cfg.Goroutines, Paths: cfg.Paths,
		ElapsedSec:        run.Elapsed.Seconds(),
		ZKRequests:        run.Requests,
		PeakZnodesPerPath: run.PeakZnodes, PeakWatchesPerPath: run.PeakWatches,
		TokenKind: run.TokenKind, Check: run.Result,
		Errors: run.Errors, ErrorSamples: run.ErrSamples,
		Interrupted: run.Interrupted, Overflow: run.Overflow,
		Orphans: run.Orphans, Writes: run.Writes,
	}
	p := run.Porcupine
	r.Porcupine = &p
	for _, n := range run.PerProc {
		r.Acquisitions += n
	}
	if sec := run.Window.Seconds(); sec > 0 {
		r.PerSec = float64(r.Acquisitions) / sec
	}
	r.LatencyUS = figures.Summarize(slices.Clone(run.Latencies))
	if len(run.HoldTimes) > 0 {
		var sum float64
		for _, d := range run.HoldTimes {
			sum += float64(d)
		}
		r.HoldMeanUS = sum / float64(len(run.HoldTimes)) / 1e3
	}
	switch {
	case r.ZKRequests < 0:
		r.RequestsPerAcq = -1
	case run.Window.ServerGrants > 0:
		// Over the grants between the readings of the counters, which a
		// loaded machine takes a little off the window's edges.
		r.RequestsPerAcq = float64(r.ZKRequests) / float64(run.Window.ServerGrants)
	}
	r.Losses, r.SessionExpiries = run.Losses, run.Expiries
	for _, ev := range run.Faults {
		if r.FaultsByKind == nil {
			r.FaultsByKind = map[fault.Kind]int{}
		}
		r.FaultsByKind[ev.Kind]++
		r.FaultsInjected++
		if ev.Recovered && ev.Failure == "" {
			r.FaultsRecovered++
		}
	}
	// -1 (n/a) when no path was sampled: redsync's locks are Redis keys.
	r.PeakZnodes = slices.Max(append([]int{-1}, run.PeakZnodes...))
	r.PeakWatches = slices.Max(append([]int{-1}, run.PeakWatches...))
	r.ProcShares = figures.Shares(run.PerProc)
	r.FairnessProcs = figures.Jain(run.PerProc)
	r.FairnessGoroutines = figures.Jain(run.PerG)
	for _, n := range run.PerG {
		if n == 0 {
			r.GoroutinesIdle++
		}
	}
	recipeFigures(&r, run, cfg)
	r.Cost = costOf(run, r.PerSec)
	return r
}

// Compare fills in the ratios against the gozk baseline.
func Compare(results []Impl) {
	i := slices.IndexFunc(results, func(r Impl) bool { return r.Impl == proto.Gozk })
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

// Failures lists why a run did not pass.
func Failures(results []Impl) []string {
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
		if w := r.Writes; !w.OK() {
			out = append(out, fmt.Sprintf("%s: %s", r.Impl, w.Line()))
			for _, res := range []*exclusion.WriteResult{w.Guarded, w.Fenced} {
				if res == nil {
					continue
				}
				for _, ex := range res.Examples[:min(len(res.Examples), 3)] {
					out = append(out, fmt.Sprintf("  stale write on path %d: %v after %v: %s", ex.Path, ex.Write, ex.Prev, ex.Detail))
				}
			}
			if w.GuardedErr != "" {
				out = append(out, fmt.Sprintf("%s: the guarded nodes' history is incomplete: %s", r.Impl, w.GuardedErr))
			}
		}
		if !r.porcupineOK() {
			out = append(out, fmt.Sprintf("%s: %s", r.Impl, r.Porcupine))
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

// FaultFailures lists the faults that failed: not recovered from, or their
// holder did not see its hold lost.
func FaultFailures(events []*fault.Event) []string {
	var out []string
	for _, ev := range events {
		if ev.Failure != "" {
			out = append(out, fmt.Sprintf("%s: fault %d (%s, %s, %s): %s", ev.Impl, ev.N, ev.Kind, ev.Variant, ev.Target, ev.Failure))
		}
	}
	return out
}

// WriteJSON writes s to the file at path.
func WriteJSON(path string, s Summary) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Verdict is the one-line outcome of a stress run.
func Verdict(s Summary) string {
	var holds, viol int
	var errs int64
	for _, r := range s.Results {
		holds += r.Check.Holds
		viol += r.Check.Violations()
		errs += r.Errors
		if r.Overflow {
			errs++
		}
	}
	faults := faultSummary(s) + porcupineSummary(s)
	switch {
	case s.OK && s.Config.Recipe == proto.RW:
		return fmt.Sprintf("PASS: read/write exclusion held (writers alone, readers together): 0 violations in %d holds checked (%d implementation(s))%s",
			holds, len(s.Results), faults)
	case s.OK && s.Config.Recipe == proto.Semaphore:
		return fmt.Sprintf("PASS: at most %d permits held at once: 0 violations in %d holds checked (%d implementation(s))%s",
			s.Config.Leases, holds, len(s.Results), faults)
	case s.OK:
		return fmt.Sprintf("PASS: mutual exclusion held: 0 violations in %d holds checked (%d implementation(s))%s",
			holds, len(s.Results), faults)
	case viol > 0:
		return fmt.Sprintf("FAIL: %d violation(s) in %d holds checked%s", viol, holds, faults)
	case staleWrites(s) > 0:
		return fmt.Sprintf("FAIL: 0 violations in %d holds checked, but a stale holder's write landed%s", holds, faults)
	case !allPorcupineOK(s):
		return fmt.Sprintf("FAIL: 0 violations in %d holds checked, but the history check failed%s", holds, faults)
	case errs > 0:
		return fmt.Sprintf("FAIL: 0 violations in %d holds checked, but %d lock error(s)%s", holds, errs, faults)
	case len(FaultFailures(s.Faults)) > 0:
		return fmt.Sprintf("FAIL: 0 violations in %d holds checked, but a fault was not recovered from%s", holds, faults)
	}
	return fmt.Sprintf("INCOMPLETE: 0 violations in %d holds checked, but the run did not complete", holds)
}

// faultSummary is the verdict's clause on faults ("" in a run without):
// how many were injected and recovered from, and the stale writes that
// landed among those checked.
func faultSummary(s Summary) string {
	if s.Config.Faults == nil {
		return ""
	}
	recovered := 0
	for _, ev := range s.Faults {
		if ev.Recovered && ev.Failure == "" {
			recovered++
		}
	}
	out := fmt.Sprintf("; %d fault(s) injected, %d recovered from", len(s.Faults), recovered)
	written, stale := 0, 0
	for _, r := range s.Results {
		if w := r.Writes; w != nil {
			stale += w.Stale()
			written += w.Fenced.Writes
			if w.Guarded != nil {
				written += w.Guarded.Writes
			}
		}
	}
	if written > 0 {
		out += fmt.Sprintf("; %d stale write(s) landed in %d checked", stale, written)
	}
	return out
}

// joinKinds lists fault kinds as -fault takes them.
func joinKinds(kinds []fault.Kind, sep string) string {
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = string(k)
	}
	return strings.Join(s, sep)
}

// joinImpls lists implementations as -impl takes them.
func joinImpls(impls []proto.Impl, sep string) string {
	s := make([]string, len(impls))
	for i, im := range impls {
		s[i] = string(im)
	}
	return strings.Join(s, sep)
}

// staleWrites is the number of stale writes that landed, in every result.
func staleWrites(s Summary) int {
	n := 0
	for _, r := range s.Results {
		n += r.Writes.Stale()
		if r.Writes != nil && r.Writes.GuardedErr != "" {
			n++
		}
	}
	return n
}
