package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// tableHeader and tableRows give the comparison table, printed on stdout
// and shown in the HTML report.
var tableHeader = []string{
	"impl", "acquisitions", "acq/s", "vs gozk",
	"p50", "p90", "p99", "max", "hold",
	"zk req/acq", "znodes/path", "watches/path",
	"fair proc", "fair gor", "overlaps", "token viol", "lost", "errors",
}

func tableRows(results []implResult) [][]string {
	var rows [][]string
	for _, r := range results {
		vs := "-"
		if r.ThroughputVsGozk > 0 {
			vs = fmt.Sprintf("%.2fx", r.ThroughputVsGozk)
		}
		tokens := fmt.Sprint(r.Check.TokenRegressions)
		if !r.Check.TokensChecked {
			tokens = "n/a"
		}
		rows = append(rows, []string{
			r.Impl, fmt.Sprint(r.Acquisitions), fmt.Sprintf("%.0f", r.PerSec), vs,
			micros(r.LatencyUS.P50), micros(r.LatencyUS.P90), micros(r.LatencyUS.P99), micros(r.LatencyUS.Max),
			micros(r.HoldMeanUS),
			fmt.Sprintf("%.2f", r.RequestsPerAcq), fmt.Sprint(r.PeakZnodes), orNA(r.PeakWatches),
			fmt.Sprintf("%.3f", r.FairnessProcs), fmt.Sprintf("%.3f", r.FairnessGoroutines),
			fmt.Sprint(r.Check.Overlaps), tokens, fmt.Sprint(r.Check.Lost), fmt.Sprint(r.Errors),
		})
	}
	return rows
}

// micros formats a duration given in microseconds with a fitting unit.
func micros(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.2fs", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%.2fms", us/1e3)
	default:
		return fmt.Sprintf("%.1fµs", us)
	}
}

func orNA(n int) string {
	if n < 0 {
		return "n/a"
	}
	return fmt.Sprint(n)
}

// printTable writes the comparison as an aligned table, numbers right-aligned.
func printTable(w io.Writer, results []implResult) {
	rows := append([][]string{tableHeader}, tableRows(results)...)
	// The first column is left-aligned: pad it to one width.
	width := 0
	for _, row := range rows {
		width = max(width, len(row[0]))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, row := range rows {
		first := row[0] + strings.Repeat(" ", width-len(row[0]))
		fmt.Fprintln(tw, first+"\t"+strings.Join(row[1:], "\t")+"\t")
	}
	tw.Flush()
}
