package main

// The demo's report: each shape's figures as rows beside README's, and the
// machine they were measured on.

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/tierlock/tierlock/stress/internal/matrix"
	"github.com/tierlock/tierlock/stress/internal/results"
)

// demoRow is one claim's line of the demo's table.
type demoRow struct {
	Shape, What, README string
	Values              []float64 // per repeat, in the order they ran
	Want                float64
	AtLeast, Stated     bool
	Holds, Violations   int
}

// demoRows reduces a shape's matrix to its claims' rows; the first row
// carries the shape's holds and violations.
func demoRows(sh demoShape, c demoConfig, sum *matrix.Summary) []demoRow {
	var rows []demoRow
	holds, viol := 0, 0
	if sum != nil {
		for _, r := range sum.Results {
			for _, f := range r.Impls {
				holds, viol = holds+f.Holds, viol+f.Violations
			}
		}
	}
	for _, cl := range sh.Claims {
		row := demoRow{Shape: sh.Title(c), What: cl.What, README: cl.README, Want: cl.Want, AtLeast: cl.AtLeast, Stated: cl.Want > 0}
		if sum != nil {
			for _, r := range sum.Results {
				if v, ok := cl.Of(r); ok && r.Error == "" {
					row.Values = append(row.Values, v)
				}
			}
		}
		rows = append(rows, row)
	}
	if len(rows) > 0 {
		rows[0].Holds, rows[0].Violations = holds, viol
	}
	return rows
}

// reading says how the runs stand to README's figure.
func (r demoRow) reading() string {
	n := len(r.Values)
	switch {
	case n == 0:
		return "not measured"
	case !r.Stated:
		return "–"
	case r.AtLeast:
		below := 0
		for _, v := range r.Values {
			if v < r.Want {
				below++
			}
		}
		if below == 0 {
			return fmt.Sprintf("all %d ≥ %s", n, num(r.Want))
		}
		return fmt.Sprintf("%d of %d < %s", below, n, num(r.Want))
	}
	// README's figure stands for the values that round to it: 0.08 for
	// 0.075 to 0.085.
	half := rounding(r.README) / 2
	lo, hi := slices.Min(r.Values), slices.Max(r.Values)
	switch {
	case r.Want+half < lo:
		return fmt.Sprintf("all %d above", n)
	case r.Want-half > hi:
		return fmt.Sprintf("all %d below", n)
	}
	return "README's in range"
}

// rounding is the last decimal place of the figure a README figure
// starts with: 0.1 for "5.3×", 0.01 for "0.08", 1 for "5".
func rounding(figure string) float64 {
	digits := strings.TrimRight(figure, "×x ")
	_, frac, ok := strings.Cut(digits, ".")
	if !ok {
		return 1
	}
	return math.Pow10(-len(frac))
}

// printDemo writes the claims table, the checker's verdict and the scale.
func printDemo(w io.Writer, c demoConfig, rows []demoRow, code int) {
	fmt.Fprintln(w, "## README's figures against this run's: medians and min–max of the per-repeat figures,\n"+
		"## the implementations' order rotated each repeat; shape: processes × goroutines × keys")
	table := [][]string{{"shape", "figure", "README", "median", "min–max", "per repeat", "reading"}}
	holds, viol := 0, 0
	for _, r := range rows {
		holds, viol = holds+r.Holds, viol+r.Violations
		med, rng, per := "–", "–", "–"
		if len(r.Values) > 0 {
			v := slices.Clone(r.Values)
			slices.Sort(v)
			med, rng = num(medianOf(v)), num(v[0])+"–"+num(v[len(v)-1])
			var each []string
			for _, x := range r.Values {
				each = append(each, num(x))
			}
			per = strings.Join(each, ", ")
		}
		table = append(table, []string{r.Shape, r.What, r.README, med, rng, per, r.reading()})
	}
	results.Table{Rows: table, Keys: 2}.Print(w)
	fmt.Fprintln(w)
	if c.Goroutines != 1000 || c.Paths != 1000 {
		fmt.Fprintf(w, "scale: the keyed shapes ran 4 × %d × %d keys, not README's 4 × 1,000 × 1,000\n", c.Goroutines, c.Paths)
	}
	fmt.Fprintln(w, "reading: README's figure within the runs' min–max (to its last digit), or all runs above or below it\n"+
		"README's figures are medians of 3 repeats of 20s windows after 5s warm-ups on a quiet machine;\n"+
		"this run's windows are in each shape's heading above")
	switch {
	case viol > 0:
		fmt.Fprintf(w, "FAIL: %d violation(s) in %d holds checked, every shape and run\n", viol, holds)
	case code != exitOK:
		fmt.Fprintf(w, "FAIL: 0 violations in %d holds checked, but a run failed or did not end: each shape's verdict above\n", holds)
	default:
		fmt.Fprintf(w, "PASS: 0 violations in %d holds checked, every shape and run, none with a lock error\n", holds)
	}
}

// load1 is the machine's 1-minute load average (-1: unknown).
func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// machine says what the machine was and how busy besides the demo: its
// processors and the load average at the start and the end.
func machine(start, end float64) string {
	s := fmt.Sprintf("%d processors (%s)", runtime.NumCPU(), cpuModel())
	if start < 0 || end < 0 {
		return s
	}
	s += fmt.Sprintf(", 1-minute load average %.1f at the start, %.1f at the end", start, end)
	if start > 1 {
		s += " (above 1 at the start: other work ran beside the demo)"
	}
	return s
}

// num writes a figure with two significant decimals below 10, one above.
func num(v float64) string {
	if v >= 10 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// medianOf is the median of sorted v.
func medianOf(v []float64) float64 {
	if len(v)%2 == 0 {
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return v[len(v)/2]
}

// cpuModel is the processor's name as /proc/cpuinfo gives it: a ratio
// measured on one processor need not hold on another.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "model unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return "model unknown"
}
