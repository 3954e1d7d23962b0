package matrix

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tierlock/tierlock/stress/internal/cells"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/results"
)

// tableHeader is the header of the per-point table (stdout and report).
var tableHeader = append(append([]string{"servers", "P×G", "paths", "hold", "runs", "impl", "acq/s", "vs gozk", "range",
	"of chain", "p50 µs", "p99 µs", "p99 vs gozk", "req/acq", "client CPU µs", "server CPU µs", "gor/proc"}, opHeader...),
	"lease w/l", "after", "abandoned", "timeout", "znodes/path", "watches/path", "Σ watches", "jain gor", "min/max share",
	"machine busy/steal", "check")

// tableKeys is the number of tableHeader's leading columns that name a
// row: the point (servers, P×G, paths, hold, runs) and the implementation.
const tableKeys = 6

// opHeader are the request kinds shown per acquisition (the workers'
// count; pings and the rest are in req/acq only).
var opHeader = []string{"create", "multi", "delete", "getChildren", "getData", "exists", "sync"}

// tableRows is the per-point table.
func tableRows(s *Summary) [][]string {
	var rows [][]string
	for _, p := range s.Points {
		c := p.Cell
		for _, f := range p.Impls {
			check := "ok"
			if !f.OK {
				check = f.Verdict
			}
			rng := ""
			if f.Impl != proto.Gozk && p.Runs > 1 && f.Ratio > 0 {
				rng = fmt.Sprintf("%.2f–%.2f", f.RatioMin, f.RatioMax)
			}
			row := []string{
				string(c.Topology), c.Shape(), fmt.Sprint(c.Paths), strings.TrimPrefix(cells.HoldLabel(c.Hold), "hold "),
				fmt.Sprint(p.Runs), string(f.Impl), fmt.Sprintf("%.0f", f.PerSec), ratio(f.Ratio), rng, fraction(f.OfChain),
				fmt.Sprintf("%.0f", f.P50US), fmt.Sprintf("%.0f", f.P99US), ratio(f.P99Ratio),
				perAcq(f.RequestsPerAcq), cpu(f.ClientCPUUS), cpu(f.ServerCPUUS), count(f.PeakGoroutines),
			}
			for _, op := range opHeader {
				row = append(row, opPerAcq(f.OpsPerAcq, op))
			}
			rows = append(rows, append(row, lease(f), fmt.Sprint(f.HoldsAfter), fmt.Sprint(f.Abandoned), timeout(f.TimeoutMs),
				count(f.PeakZnodes), count(f.PeakWatches), count(f.SumPeakWatches),
				fmt.Sprintf("%.3f", f.JainGoroutines), fmt.Sprintf("%.2f/%.2f", f.MinShare, f.MaxShare),
				results.HostText(f.Host), check))
		}
	}
	return rows
}

func fraction(v float64) string {
	if v <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

func cpu(us float64) string {
	if us < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f", us)
}

func opPerAcq(ops map[string]float64, op string) string {
	if ops == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", ops[op])
}

// lease is the lease's waits and lapses, "–" for an implementation
// without one (gozk).
func lease(f PointImpl) string {
	if !f.Lease {
		return "–"
	}
	return fmt.Sprintf("%d/%d", f.LeaseWaits, f.LeaseLapses)
}

func timeout(ms int64) string {
	if ms <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%gs", float64(ms)/1e3)
}

func ratio(v float64) string {
	if v <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", v)
}

func perAcq(v float64) string {
	if v < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", v)
}

func count(n int) string {
	if n < 0 {
		return "n/a"
	}
	return fmt.Sprint(n)
}

// warnings say why the matrix's ratios are not to be taken at face value:
// points that rest on one run, and points whose runs met a saturated
// machine (the median of their runs' machine figures).
func warnings(s *Summary) []string {
	var out []string
	single, hot := 0, []string{}
	for _, p := range s.Points {
		if p.Runs == 1 && len(p.Impls) > 1 {
			single++
		}
		for _, f := range p.Impls {
			if results.Saturated(f.Host) {
				hot = append(hot, p.Cell.Point())
				break
			}
		}
	}
	if single > 0 {
		out = append(out, fmt.Sprintf("warning: %d of %d points rest on one run: their ratios are single measurements, "+
			"not medians; %s", single, len(s.Points), results.OneRunNote))
	}
	if len(hot) > 0 {
		out = append(out, fmt.Sprintf("warning: the machine was saturated (machine busy/steal: busy above %.0f%% or steal "+
			"above %.0f%%) in %d of %d points, e.g. %s: %s", 100*results.SaturatedBusy, 100*results.SaturatedSteal,
			len(hot), len(s.Points), firstOf(hot), results.SaturatedNote))
	}
	return out
}

// verdict is the matrix's one line: what the checker found over every
// hold, and which cells had lock errors, failed otherwise or did not run.
func verdict(s *Summary) string {
	var ran, holds, viol int
	var errCells, otherCells, notRun []string
	for _, r := range s.Results {
		if r.Error != "" {
			notRun = append(notRun, r.Key+": "+r.Error)
			continue
		}
		if r.complete() {
			ran++
		}
		h, v, errs, other := r.findings()
		holds, viol = holds+h, viol+v
		if len(errs) > 0 {
			errCells = append(errCells, r.Key+" "+strings.Join(errs, ", "))
		}
		if len(other) > 0 {
			otherCells = append(otherCells, r.Key+" "+strings.Join(other, ", "))
		}
	}
	head := fmt.Sprintf("%d violation(s) in %d holds checked", viol, holds)
	if viol > 0 {
		head = "FAIL: " + head
	}
	if s.OK {
		return fmt.Sprintf("PASS: %s; %d of %d cells ran, none with a lock error", head, ran, s.Cells)
	}
	parts := []string{head}
	if len(errCells) > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d cells had lock errors: %s", len(errCells), s.Cells, listed(errCells)))
	}
	if len(otherCells) > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d cells failed otherwise: %s", len(otherCells), s.Cells, listed(otherCells)))
	}
	if len(notRun) > 0 {
		parts = append(parts, fmt.Sprintf("%d cell(s) could not be run: %s", len(notRun), listed(notRun)))
	}
	if ran < s.Cells {
		parts = append(parts, fmt.Sprintf("INCOMPLETE: %d of %d cells ran", ran, s.Cells))
	}
	return strings.Join(parts, "; ")
}

// findings are what the checker found in the cell: the holds checked,
// the violations, the implementations with lock errors and those that
// failed otherwise (orphans, a record overflow).
func (r Result) findings() (holds, viol int, errs, other []string) {
	for _, f := range r.Impls {
		holds += f.Holds
		viol += f.Violations
		switch {
		case f.Errors > 0:
			errs = append(errs, fmt.Sprintf("%s %d (%s)", f.Impl, f.Errors, f.Verdict))
		case !f.OK && f.Violations == 0:
			other = append(other, fmt.Sprintf("%s: %s", f.Impl, f.Verdict))
		}
	}
	return holds, viol, errs, other
}

// firstOf writes up to three items and how many more there are.
func firstOf(items []string) string {
	if len(items) <= 3 {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:3], ", "), len(items)-3)
}

// listed writes up to three items and how many more there are.
func listed(items []string) string {
	if len(items) <= 3 {
		return strings.Join(items, "; ")
	}
	return fmt.Sprintf("%s; and %d more (see below)", strings.Join(items[:3], "; "), len(items)-3)
}

// violations counts the violations found in every cell.
func violations(s *Summary) int {
	n := 0
	for _, r := range s.Results {
		for _, f := range r.Impls {
			n += f.Violations
		}
	}
	return n
}

// grantedTimeouts lists the distinct session timeouts the servers granted.
func grantedTimeouts(s *Summary) string {
	var seen []string
	for _, r := range s.Results {
		for _, f := range r.Impls {
			if t := timeout(f.TimeoutMs); !slices.Contains(seen, t) {
				seen = append(seen, t)
			}
		}
	}
	if len(seen) == 0 {
		return "none yet"
	}
	return strings.Join(seen, ", ")
}
