package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tierlock/tierlock/stress/internal/figures"
	"github.com/tierlock/tierlock/stress/internal/proto"
)

// The table of stress -cold.

// coldTarget is DESIGN.md's bound: a cold Lock within 1.5x of zk.Lock's.
const coldTarget = 1.5

// coldInfo is what the table's heading says of the run.
type coldInfo struct {
	servers      []string
	source       string
	load0, load1 string // the host's load average at the start and the end
	started      time.Time
}

// cellStats are one cell's figures.
type cellStats struct {
	n, within, failed int // Locks measured, of them within the budget; failures
	med, p99          time.Duration
}

func statsOf(c coldCell, budget time.Duration) cellStats {
	ns := make([]int64, len(c.lat))
	st := cellStats{n: len(c.lat), failed: c.failed}
	for i, d := range c.lat {
		ns[i] = int64(d)
		if d <= budget {
			st.within++
		}
	}
	slices.Sort(ns)
	if len(ns) > 0 {
		st.med = time.Duration(figures.Percentile(ns, 0.5))
		st.p99 = time.Duration(figures.Percentile(ns, 0.99))
	}
	return st
}

// rowName names a row: the first Lock, or the Lock after spell s.
func rowName(cfg coldConfig, row int) string {
	if row == 0 {
		return "first"
	}
	return "after " + spell(cfg.Idle[row-1])
}

// spell names an idle spell as the issue does: 35s, 60s, 5m.
func spell(d time.Duration) string {
	switch {
	case d >= 2*time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}

// implName is an implementation's name in the table.
func implName(im proto.Impl) string {
	if im == proto.Gozk {
		return "zk.Lock"
	}
	return string(im)
}

// printCold prints the heading, the table, the target's verdict and the
// failures.
func printCold(w io.Writer, cfg coldConfig, info coldInfo, cells [][]coldCell) {
	fmt.Fprintf(w, "stress -cold: ZooKeeper %s (%s), session timeout %v asked; %d connections per implementation and idle spell, started %v apart; run started %s\n",
		strings.Join(info.servers, ","), info.source, cfg.SessionTimeout, cfg.N, cfg.Stagger, info.started.Format(time.RFC3339))
	if info.load0 != "" {
		fmt.Fprintf(w, "host load average (1, 5, 15 min): %s at the start, %s at the end\n", info.load0, info.load1)
	}
	fmt.Fprintf(w, "Lock of a free lock on an existing path, from making the handle to Lock's return, in ms; p99 by nearest rank;\n"+
		"x: ratio to zk.Lock's; <=%v: Locks that returned within %v (-cold-budget)\n\n", cfg.Budget, cfg.Budget)
	stats := make([][]cellStats, len(cells))
	for k := range cells {
		for _, c := range cells[k] {
			stats[k] = append(stats[k], statsOf(c, cfg.Budget))
		}
	}
	printColdTable(w, cfg, stats)
	printColdVerdict(w, cfg, stats)
	for k, row := range cells {
		for r, c := range row {
			for _, e := range c.errs {
				fmt.Fprintf(w, "  failed: %s, %s: %s\n", implName(cfg.Impls[k]), rowName(cfg, r), e)
			}
		}
	}
}

// printColdTable prints one line per row, each implementation's columns
// side by side, zk.Lock's first, under a line of their names.
func printColdTable(w io.Writer, cfg coldConfig, stats [][]cellStats) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	names, head := []string{""}, []string{"Lock"}
	for k, im := range cfg.Impls {
		names = append(names, "", implName(im), "")
		head = append(head, "|", "p50", "p99")
		if k > 0 {
			names = append(names, "", "")
			head = append(head, "x p50", "x p99")
		}
		names = append(names, "")
		head = append(head, fmt.Sprintf("<=%v", cfg.Budget))
	}
	fmt.Fprintln(tw, strings.Join(names, "\t")+"\t")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for row := range stats[0] {
		line := []string{rowName(cfg, row)}
		base := stats[0][row]
		for k := range cfg.Impls {
			st := stats[k][row]
			line = append(line, "|", ms(st.med), ms(st.p99))
			if k > 0 {
				line = append(line, ratio(st.med, base.med), ratio(st.p99, base.p99))
			}
			line = append(line, fmt.Sprintf("%d/%d", st.within, st.n+st.failed))
		}
		fmt.Fprintln(tw, strings.Join(line, "\t")+"\t")
	}
	_ = tw.Flush()
}

// printColdVerdict says, for each implementation, in which cells its
// median and p99 are within coldTarget of zk.Lock's, and how many of its
// Locks missed the budget.
func printColdVerdict(w io.Writer, cfg coldConfig, stats [][]cellStats) {
	fmt.Fprintf(w, "\ntarget (DESIGN.md): median and p99 within %.1fx of zk.Lock's in every row\n", coldTarget)
	for k := range cfg.Impls {
		var over []string
		slow, all := 0, 0
		for row, st := range stats[k] {
			base := stats[0][row]
			slow += st.n + st.failed - st.within
			all += st.n + st.failed
			if k == 0 {
				continue
			}
			switch {
			case st.n == 0 || base.n == 0:
				over = append(over, rowName(cfg, row)+" (not measured)")
			case float64(st.med) > coldTarget*float64(base.med) || float64(st.p99) > coldTarget*float64(base.p99):
				over = append(over, fmt.Sprintf("%s (%s/%s)", rowName(cfg, row), ratio(st.med, base.med), ratio(st.p99, base.p99)))
			}
		}
		verdict := "baseline"
		if k > 0 {
			verdict = fmt.Sprintf("met in %d of %d rows", len(stats[k])-len(over), len(stats[k]))
			if len(over) > 0 {
				verdict += "; not in " + strings.Join(over, ", ")
			}
		}
		fmt.Fprintf(w, "  %-8s %s; %d of %d Locks over %v\n", implName(cfg.Impls[k]), verdict, slow, all, cfg.Budget)
	}
}

// ms formats d in milliseconds with three significant digits.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case d == 0:
		return "-"
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// ratio formats a/b, or "-" when either is missing.
func ratio(a, b time.Duration) string {
	if a == 0 || b == 0 {
		return "-"
	}
	// Fewer decimals as it grows, as ms does: a cold Lock 200 times
	// zk.Lock's widened the table past 120 columns (make test run 74).
	switch v := float64(a) / float64(b); {
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}
