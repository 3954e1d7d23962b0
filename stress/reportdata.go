package main

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/tierlock/tierlock/stress/internal/check"
	"github.com/tierlock/tierlock/stress/internal/report"
)

// writeReport writes the HTML report of a run.
func writeReport(path string, s summary, runs []*implRun) error {
	cfg := s.Config
	d := report.Data{
		Title:     fmt.Sprintf("tierlock stress: %d processes x %d goroutines on %d lock path(s)", cfg.Procs, cfg.Goroutines, cfg.Paths),
		Generated: s.Started,
		Header:    tableHeader,
		Rows:      tableRows(s.Results),
		OK:        s.OK,
		Verdict:   verdict(s),
		Failures:  s.Failures,
		Settings:  settings(s),
	}
	for i, run := range runs {
		res := s.Results[i]
		d.Impls = append(d.Impls, report.Impl{
			Name:      run.name,
			PerSec:    res.PerSec,
			ReqPerAcq: res.RequestsPerAcq,
			LatencyUS: latencySample(run.latencies, 20000),
			Timeline:  timelineOf(run, cfg.Procs),
			Verdict:   implVerdict(res),
			OK:        res.OK(),
		})
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := report.Write(f, d); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func settings(s summary) [][2]string {
	cfg := s.Config
	length := fmt.Sprintf("%v per implementation", cfg.Duration)
	if cfg.Acquisitions > 0 {
		length = fmt.Sprintf("%d acquisitions per implementation", cfg.Acquisitions)
	}
	server := strings.Join(s.Servers, ",")
	if s.Local {
		server += " (started by stress)"
	}
	out := [][2]string{
		{"implementations", strings.Join(cfg.Impls, ", ")},
		{"processes x goroutines", fmt.Sprintf("%d x %d", cfg.Procs, cfg.Goroutines)},
		{"lock paths", fmt.Sprintf("%d, picked %s", cfg.Paths, cfg.Pick)},
		{"run length", length},
		{"critical section", fmt.Sprintf("%v (%s)", cfg.Hold, cfg.HoldMode)},
		{"hand-off bound", fmt.Sprintf("%d hand-offs or %v (tier-handoff only)", cfg.HandoffMax, cfg.HandoffMaxHold)},
		{"ZooKeeper", server},
		{"session timeout", cfg.SessionTimeout.String()},
	}
	for _, r := range s.Results {
		kind := r.TokenKind
		if kind == "" {
			kind = "none (token check skipped)"
		}
		out = append(out, [2]string{"fencing token of " + r.Impl, kind})
	}
	return out
}

func implVerdict(r implResult) string {
	tokens := fmt.Sprintf("%d token violations (%s)", r.Check.TokenRegressions, r.TokenKind)
	if !r.Check.TokensChecked {
		tokens = "tokens not checked"
	}
	return fmt.Sprintf("%d overlaps, %s, %d lost in %d holds on %d path(s)",
		r.Check.Overlaps, tokens, r.Check.Lost, r.Check.Holds, len(r.Check.Paths))
}

// latencySample returns up to n latencies in µs, evenly strided.
func latencySample(ns []int64, n int) []float64 {
	step := max(1, len(ns)/n)
	out := make([]float64, 0, min(len(ns), n+1))
	for i := 0; i < len(ns); i += step {
		out = append(out, float64(ns[i])/1e3)
	}
	return out
}

// timelineOf picks a window of the holds of the first lock path that shows
// several changes of process: it starts a fifth into the run (past the
// warm-up) and takes at least 40 holds and 12 changes of holder process,
// at most 600 holds.
func timelineOf(run *implRun, procs int) report.Timeline {
	tl := report.Timeline{Lanes: procs}
	if len(run.paths) > 0 {
		tl.Path = run.paths[0]
	}
	var holds []check.Hold
	for _, h := range run.holds {
		if h.Path == 0 && h.Exit != 0 {
			holds = append(holds, h)
		}
	}
	if len(holds) == 0 {
		return tl
	}
	slices.SortFunc(holds, func(a, b check.Hold) int { return cmp.Compare(a.Enter, b.Enter) })
	from := run.start + int64(run.elapsed)/5
	i, _ := slices.BinarySearchFunc(holds, from, func(h check.Hold, t int64) int { return cmp.Compare(h.Enter, t) })
	if len(holds)-i < 40 {
		i = max(0, len(holds)-40)
	}
	bad := map[[3]int64]bool{}
	for _, ex := range run.result.Examples {
		if ex.Kind == check.Overlap {
			bad[[3]int64{int64(ex.Hold.Proc), int64(ex.Hold.G), ex.Hold.Enter}] = true
			if ex.Prev != nil {
				bad[[3]int64{int64(ex.Prev.Proc), int64(ex.Prev.G), ex.Prev.Enter}] = true
			}
		}
	}
	ms := func(t int64) float64 { return float64(t-run.start) / 1e6 }
	changes := 0
	end := holds[i].Exit
	for j := i; j < len(holds); j++ {
		h := holds[j]
		if len(tl.Bars) >= 600 || len(tl.Bars) >= 40 && changes >= 12 {
			break
		}
		if j > i && h.Proc != holds[j-1].Proc {
			changes++
		}
		tl.Bars = append(tl.Bars, report.Bar{
			Lane: int(h.Proc), G: int(h.G), Start: ms(h.Enter), End: ms(h.Exit),
			Overlap: bad[[3]int64{int64(h.Proc), int64(h.G), h.Enter}],
		})
		end = max(end, h.Exit)
	}
	tl.From, tl.To = ms(holds[i].Enter), ms(end)
	pad := (tl.To - tl.From) * 0.01
	tl.From, tl.To = tl.From-pad, tl.To+pad
	return tl
}
