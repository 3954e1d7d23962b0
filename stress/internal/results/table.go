package results

import (
	"fmt"
	"io"
	"strings"

	"github.com/tierlock/tierlock/stress/internal/fault"
	"github.com/tierlock/tierlock/stress/internal/proto"
)

// tableHeader and tableRows give the comparison table, printed on stdout
// and shown in the HTML report.
var tableHeader = []string{
	"impl", "acquisitions", "acq/s", "vs gozk",
	"p50", "p90", "p99", "max", "hold",
	"zk req/acq", "znodes/path", "watches/path",
	"fair proc", "fair gor", "overlaps", "token viol", "lost", "errors",
}

func tableRows(results []Impl) [][]string {
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
			string(r.Impl), fmt.Sprint(r.Acquisitions), fmt.Sprintf("%.0f", r.PerSec), vs,
			micros(r.LatencyUS.P50), micros(r.LatencyUS.P90), micros(r.LatencyUS.P99), micros(r.LatencyUS.Max),
			micros(r.HoldMeanUS),
			reqPerAcq(r.RequestsPerAcq), orNA(r.PeakZnodes), orNA(r.PeakWatches),
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

func reqPerAcq(v float64) string {
	if v < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", v)
}

func orNA(n int) string {
	if n < 0 {
		return "n/a"
	}
	return fmt.Sprint(n)
}

// PrintTable writes the comparison as an aligned table, numbers
// right-aligned, split to fit Width; under it what each implementation is,
// and the warnings against reading too much into it.
func PrintTable(w io.Writer, results []Impl) {
	printAligned(w, append([][]string{tableHeader}, tableRows(results)...))
	impls := make([]proto.Impl, len(results))
	var recipe proto.Recipe
	for i, r := range results {
		impls[i], recipe = r.Impl, r.Recipe
	}
	fmt.Fprintln(w)
	PrintLegend(w, impls, recipe)
	PrintWarnings(w, Warnings(results))
}

// printAligned writes rows (the first a header) as a table that fits
// Width, the first column left-aligned, the others right-aligned.
func printAligned(w io.Writer, rows [][]string) {
	Table{Rows: rows, Keys: 1}.Print(w)
}

// faultHeader and faultRows give the fault log, printed after the table
// and shown in the HTML report. Times after "at" count from the fault's
// start.
var faultHeader = []string{"impl", "#", "at", "fault", "target", "healed", "any acq", "affected acq", "outcome"}

func faultRows(events []*fault.Event) [][]string {
	var rows [][]string
	for _, ev := range events {
		outcome := "recovered"
		if ev.Failure != "" {
			outcome = "FAILED: " + ev.Failure
		}
		if ev.HolderLossSec != nil {
			outcome += fmt.Sprintf("; holder saw its loss after %.2fs (%s)", *ev.HolderLossSec, shortCause(ev.HolderCause))
		}
		if ev.SessionExpired != nil {
			if *ev.SessionExpired {
				outcome += "; session expired"
			} else {
				outcome += "; session did not expire"
			}
		}
		if ev.Note != "" {
			outcome += "; " + ev.Note
		}
		rows = append(rows, []string{
			ev.Impl, fmt.Sprint(ev.N), fmt.Sprintf("%.2fs", ev.AtSec), string(ev.Kind) + ": " + ev.Variant, ev.Target,
			offset(ev.HealedSec), offset(ev.RecoveryAnySec), offset(ev.RecoveryOwnSec), outcome,
		})
	}
	return rows
}

func offset(sec float64) string {
	if sec < 0 {
		return "-"
	}
	return fmt.Sprintf("+%.2fs", sec)
}

// shortCause drops the wrapping of a loss cause: "zklock: lock lost:
// zklock: connection to ZooKeeper lost" says the same as its end.
func shortCause(c string) string {
	if i := strings.LastIndex(c, "lock lost: "); i >= 0 {
		c = c[i+len("lock lost: "):]
	}
	return strings.TrimPrefix(c, "zklock: ")
}

// PrintFaultLog writes the fault log of a run with -fault.
func PrintFaultLog(w io.Writer, s Summary) {
	cfg := s.Config
	fmt.Fprintln(w)
	printNote(w, "", "", fmt.Sprintf("Fault log (-fault %s, seed %d, every ~%v; session timeout %v). Recovered: the workers a fault "+
		"hit acquired again within the session timeout + %v of its healing. Times after \"at\" count from the fault's start.",
		joinKinds(cfg.Faults, ","), cfg.FaultSeed, cfg.FaultEvery, cfg.SessionTimeout, fault.RecoveryBound))
	if len(s.Faults) == 0 {
		fmt.Fprintln(w, "  no fault was injected (the run was too short for one)")
	} else {
		Table{Rows: append([][]string{faultHeader}, faultRows(s.Faults)...), Keys: 2, Text: true, Indent: "  "}.Print(w)
	}
	for _, r := range s.Results {
		printNote(w, "  ", "    ", fmt.Sprintf("%s: %d fault(s) injected, %d recovered from; %d hold(s) ended by a loss; "+
			"%d session expiries; %d hold(s) of killed workers cut at the kill, %d of paused workers cut at the stop, "+
			"%d cut at the loss their holder saw before leaving (not violations); loss before grant: %d lost hold(s) "+
			"checked, %d violation(s); %d orphan node(s)",
			r.Impl, r.FaultsInjected, r.FaultsRecovered, r.Losses, r.SessionExpiries, r.Check.Cut, r.Check.PausedCut,
			r.Check.ToldCut, r.Check.LossesChecked, r.Check.LateLosses, len(r.Orphans)))
		printNote(w, "    ", "      ", "injected by kind: "+byKind(cfg.Faults, r.FaultsByKind))
		if wr := r.Writes; wr != nil {
			printNote(w, "    ", "      ", wr.Line())
			c := wr.Workers
			printNote(w, "    ", "      ", fmt.Sprintf("as the workers saw them: guarded %d applied, %d refused by the server, "+
				"%d refused by the lock (loss known), %d outcome unknown, %d other errors; fenced %d admitted, %d refused, %d errors",
				c.GuardedApplied, c.GuardedStale, c.GuardedLost, c.GuardedUnknown, c.GuardedOther,
				c.FenceAdmitted, c.FenceRefused, c.FenceErrors))
			for _, e := range c.Samples {
				printNote(w, "      e.g. ", "        ", e)
			}
		}
	}
}

// byKind lists the faults injected of each kind asked for, in -fault's
// order.
func byKind(kinds []fault.Kind, n map[fault.Kind]int) string {
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, n[k])
	}
	return strings.Join(parts, ", ")
}
