package results

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/stress/internal/fault"
	"github.com/tierlock/tierlock/stress/internal/report"
	"github.com/tierlock/tierlock/stress/internal/runner"
)

// WriteReport writes the HTML report of the runs of s to the file at path.
func WriteReport(path string, s Summary, runs []*runner.Run) error {
	cfg := s.Config
	d := report.Data{
		Title:     fmt.Sprintf("tierlock stress: %d processes x %d goroutines on %d lock path(s)", cfg.Procs, cfg.Goroutines, cfg.Paths),
		Generated: s.Started,
		Header:    tableHeader,
		Rows:      tableRows(s.Results),
		OK:        s.OK,
		Violated:  violations(s) > 0,
		Verdict:   Verdict(s),
		Failures:  s.Failures,
		Settings:  settings(s),
		Warnings:  Warnings(s.Results),
	}
	for _, r := range s.Results {
		d.ImplLegend = append(d.ImplLegend, [2]string{string(r.Impl), Legend(r.Impl, r.Recipe)})
	}
	if len(s.Results) > 0 {
		d.CostNote = WithRedsyncNote("Inside the measured window ("+windowNote(s.Results[0].Cost)+"). "+costNote, s.Config.Impls)
		d.CostHeader, d.CostRows = costHeader(), costRows(s.Results)
		if rows := limitsRows(s.Results); len(rows) > 0 {
			d.LimitsNote = fmt.Sprintf(limitsNote, probeSeconds(s.Results))
			d.LimitsHeader, d.LimitsRows = limitsHeader, rows
		}
	}
	if h := recipeHeader(cfg.Recipe); h != nil {
		d.RecipeNote, d.RecipeHeader, d.RecipeRows = recipeNote(cfg), h, recipeRows(s.Results)
	}
	if cfg.Faults != nil {
		d.FaultHeader, d.FaultRows = faultHeader, faultRows(s.Faults)
		d.FaultNote = fmt.Sprintf("-fault %s, seed %d, one every ~%v after the previous recovery; session timeout %v. "+
			"A fault is recovered from when the workers it hit acquire again within the session timeout + %v of its "+
			"healing. \"at\" counts from the start of the run, the other times from the fault's start: healed (server "+
			"restarted, connections released, replacement started), any acq (the next acquisition by any worker), "+
			"affected acq (the next of the worker(s) hit, after the healing).",
			joinKinds(cfg.Faults, ","), cfg.FaultSeed, cfg.FaultEvery, cfg.SessionTimeout, fault.RecoveryBound)
	}
	for i, run := range runs {
		res := s.Results[i]
		d.Impls = append(d.Impls, report.Impl{
			Name:      string(run.Name),
			PerSec:    res.PerSec,
			ReqPerAcq: res.RequestsPerAcq,
			LatencyUS: latencySample(run.Latencies, 20000),
			Timeline:  timelineOf(run, cfg.Procs),
			Overview:  overviewOf(run, cfg),
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

func settings(s Summary) [][2]string {
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
		{"implementations", joinImpls(cfg.Impls, ", ")},
		{"recipe", recipeSetting(cfg)},
		{"processes x goroutines", fmt.Sprintf("%d x %d", cfg.Procs, cfg.Goroutines)},
		{"lock paths", fmt.Sprintf("%d, picked %s", cfg.Paths, cfg.Pick)},
		{"run length", length},
		{"critical section", fmt.Sprintf("%v (%s)", cfg.Hold, cfg.HoldMode)},
		{"hand-off bound", fmt.Sprintf("%d hand-offs or %v (tier-handoff only)", cfg.HandoffMax, cfg.HandoffMaxHold)},
		{"ZooKeeper", server},
		{"session timeout", fmt.Sprintf("%v asked; granted: %s", cfg.SessionTimeout, negotiated(s.Results))},
		{"measured window", windowSetting(cfg)},
	}
	if cfg.Faults != nil {
		out = append(out,
			[2]string{"faults", fmt.Sprintf("%s, one every ~%v (seed %d)", joinKinds(cfg.Faults, ", "), cfg.FaultEvery, cfg.FaultSeed)},
			[2]string{"recovery bound", fmt.Sprintf("session timeout + %v after a fault's healing", fault.RecoveryBound)})
	}
	for _, r := range s.Results {
		kind := r.TokenKind
		if kind == "" {
			kind = "none (token check skipped)"
		}
		out = append(out, [2]string{"fencing token of " + string(r.Impl), kind})
	}
	return out
}

func implVerdict(r Impl) string {
	tokens := fmt.Sprintf("%d token violations (%s)", r.Check.TokenRegressions, r.TokenKind)
	if !r.Check.TokensChecked {
		tokens = "tokens not checked"
	}
	v := fmt.Sprintf("%d overlaps, %s, %d lost in %d holds on %d path(s)",
		r.Check.Overlaps, tokens, r.Check.Lost, r.Check.Holds, len(r.Check.Paths))
	if r.FaultsInjected > 0 {
		v += fmt.Sprintf("; %d of %d faults recovered from", r.FaultsRecovered, r.FaultsInjected)
		if r.Check.Cut > 0 {
			v += fmt.Sprintf("; %d hold(s) of killed workers cut at the kill", r.Check.Cut)
		}
		if r.Check.PausedCut > 0 {
			v += fmt.Sprintf("; %d hold(s) of paused workers cut at the stop", r.Check.PausedCut)
		}
		if r.Check.ToldCut > 0 {
			v += fmt.Sprintf("; %d hold(s) cut at the loss their holder saw", r.Check.ToldCut)
		}
		if r.Writes != nil {
			v += "; " + r.Writes.Line()
		}
	}
	return v
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
func timelineOf(run *runner.Run, procs int) report.Timeline {
	tl := report.Timeline{Lanes: procs}
	if len(run.Paths) > 0 {
		tl.Path = run.Paths[0]
	}
	var holds []exclusion.Hold
	for _, h := range run.Holds {
		if h.Path == 0 && h.Exit != 0 {
			holds = append(holds, h)
		}
	}
	if len(holds) == 0 {
		return tl
	}
	slices.SortFunc(holds, func(a, b exclusion.Hold) int { return cmp.Compare(a.Enter, b.Enter) })
	from := run.Start + int64(run.Elapsed)/5
	i, _ := slices.BinarySearchFunc(holds, from, func(h exclusion.Hold, t int64) int { return cmp.Compare(h.Enter, t) })
	if len(holds)-i < 40 {
		i = max(0, len(holds)-40)
	}
	bad := overlapping(run)
	ms := func(t int64) float64 { return float64(t-run.Start) / 1e6 }
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
			Lane: laneOf(run, h.Proc), G: int(h.G), Start: ms(h.Enter), End: ms(h.Exit),
			Overlap: bad[[3]int64{int64(h.Proc), int64(h.G), h.Enter}],
		})
		end = max(end, h.Exit)
	}
	tl.From, tl.To = ms(holds[i].Enter), ms(end)
	pad := (tl.To - tl.From) * 0.01
	tl.From, tl.To = tl.From-pad, tl.To+pad
	tl.Faults = faultMarks(run, 1e3)
	return tl
}

// overlapping marks the holds of the run's overlap examples, by process,
// goroutine and enter time.
func overlapping(run *runner.Run) map[[3]int64]bool {
	bad := map[[3]int64]bool{}
	for _, ex := range run.Result.Examples {
		if ex.Kind == exclusion.Overlap {
			bad[[3]int64{int64(ex.Hold.Proc), int64(ex.Hold.G), ex.Hold.Enter}] = true
			if ex.Prev != nil {
				bad[[3]int64{int64(ex.Prev.Proc), int64(ex.Prev.G), ex.Prev.Enter}] = true
			}
		}
	}
	return bad
}

// laneOf is the lane of a process: its worker slot.
func laneOf(run *runner.Run, proc int32) int {
	if int(proc) < len(run.SlotOf) {
		return run.SlotOf[proc]
	}
	return int(proc)
}

// faultMarks are the faults of a run in units per second (1 for seconds,
// 1e3 for milliseconds) since its start.
func faultMarks(run *runner.Run, unit float64) []report.FaultMark {
	var out []report.FaultMark
	for _, ev := range run.Faults {
		if !ev.Injected() {
			continue
		}
		m := report.FaultMark{
			Start:     ev.AtSec * unit,
			End:       (ev.AtSec + ev.HealedSec) * unit,
			Recovered: -1,
			Label:     fmt.Sprintf("%d %s", ev.N, ev.Kind),
			Failed:    ev.Failure != "",
		}
		if ev.RecoveryOwnSec >= 0 {
			m.Recovered = (ev.AtSec + ev.RecoveryOwnSec) * unit
		}
		out = append(out, m)
	}
	return out
}

// overviewOf bins the holds of the whole run per worker slot, for the
// report's fault view; nil for a run without faults.
func overviewOf(run *runner.Run, cfg runner.Config) *report.Overview {
	if cfg.Faults == nil {
		return nil
	}
	const bins = 600
	ov := &report.Overview{Lanes: cfg.Procs, Seconds: run.Elapsed.Seconds(), Faults: faultMarks(run, 1)}
	if ov.Seconds <= 0 {
		return ov
	}
	counts := make([][]float64, cfg.Procs)
	for i := range counts {
		counts[i] = make([]float64, bins)
	}
	width := float64(run.Elapsed) / bins
	busiest := 0.0
	for _, h := range run.Holds {
		b := int(float64(h.Enter-run.Start) / width)
		lane := laneOf(run, h.Proc)
		if b < 0 || b >= bins || lane < 0 || lane >= cfg.Procs {
			continue
		}
		counts[lane][b]++
		busiest = max(busiest, counts[lane][b])
	}
	for _, row := range counts {
		for b := range row {
			if busiest > 0 {
				row[b] /= busiest
			}
		}
	}
	ov.Activity = counts
	return ov
}
