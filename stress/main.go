package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/tierlock/tierlock/internal/child"
	"github.com/tierlock/tierlock/stress/internal/fault"
	"github.com/tierlock/tierlock/stress/internal/fleet"
	"github.com/tierlock/tierlock/stress/internal/progress"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/results"
	"github.com/tierlock/tierlock/stress/internal/runner"
	"github.com/tierlock/tierlock/stress/internal/worker"
)

func main() {
	child.Dispatch(map[string]func() int{proto.Role: worker.Main})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit statuses.
const (
	exitOK        = 0
	exitViolation = 1 // mutual exclusion violated, or lock errors
	exitUsage     = 2
	exitRun       = 3 // the run could not be carried out
)

// run is the stress command, parent side; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if isCold(args) {
		return runCold(ctx, args, stdout, stderr)
	}
	if isIdleCost(args) {
		return runIdleCost(ctx, args, stdout, stderr)
	}
	if isDemo(args) {
		return runDemo(ctx, args, stdout, stderr)
	}
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "stress: %s\nRun 'stress -h' for the flags.\n", strings.TrimPrefix(err.Error(), "usage: "))
		return exitUsage
	}
	if cfg.Matrix != nil {
		return runMatrix(ctx, cfg, stdout, stderr)
	}
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	r := runner.New(cfg, exe, stderr, !cfg.Quiet && progress.IsTerminal(stderr))
	defer r.Close()
	if err := r.Setup(ctx); err != nil {
		fmt.Fprintln(stderr, "stress:", runErr(err))
		return exitRun
	}
	sum := results.Summary{Started: time.Now().UTC(), Config: cfg, Servers: r.Servers(), Local: r.Started()}
	runs, err := runImpls(ctx, r, &sum, stderr)
	if err != nil {
		return exitRun
	}
	code := judge(&sum)
	printSummary(stdout, sum, runs)
	return max(code, writeOutputs(sum, runs, stderr))
}

// runErr is a run's error without its package mark.
func runErr(err error) string { return strings.TrimPrefix(err.Error(), fleet.ErrRun.Error()+": ") }

// runImpls runs each implementation in turn until ctx ends, adding its
// figures (and faults) to sum; an error is a run that could not be carried
// out, already reported.
func runImpls(ctx context.Context, r *runner.Runner, sum *results.Summary, stderr io.Writer) ([]*runner.Run, error) {
	cfg := sum.Config
	var runs []*runner.Run
	for _, name := range cfg.Impls {
		if ctx.Err() != nil {
			break
		}
		run, err := r.RunImpl(ctx, name)
		if err != nil {
			fmt.Fprintf(stderr, "stress: %s: %s\n", name, runErr(err))
			return nil, err
		}
		res := results.FiguresOf(run, cfg)
		fmt.Fprintf(stderr, "stress: %s: %s, %d violations in %d holds; %s\n",
			name, results.CountLine(res), res.Check.Violations(), res.Check.Holds, res.Porcupine)
		runs = append(runs, run)
		sum.Results = append(sum.Results, res)
		if cfg.Faults != nil {
			if sum.Faults == nil {
				sum.Faults = []*fault.Event{} // faults asked for: [] in the JSON, not null
			}
			sum.Faults = append(sum.Faults, run.Faults...)
		}
	}
	return runs, nil
}

// judge compares the runs, lists the failures and returns the exit status
// they make: a violation or lock error, or a run cut short.
func judge(sum *results.Summary) int {
	results.Compare(sum.Results)
	sum.Failures = append(results.Failures(sum.Results), results.FaultFailures(sum.Faults)...)
	violated := len(sum.Failures) > 0
	incomplete := len(sum.Results) < len(sum.Config.Impls)
	for _, res := range sum.Results {
		if res.Interrupted {
			incomplete = true
			sum.Failures = append(sum.Failures, fmt.Sprintf("%s: interrupted after %.1fs (what ran was checked)", res.Impl, res.ElapsedSec))
		}
	}
	if len(sum.Results) < len(sum.Config.Impls) {
		sum.Failures = append(sum.Failures, fmt.Sprintf("interrupted: %d of %d implementations ran", len(sum.Results), len(sum.Config.Impls)))
	}
	sum.OK = !violated && !incomplete
	switch {
	case violated:
		return exitViolation
	case incomplete:
		return exitRun
	}
	return exitOK
}

// printSummary prints the tables and the verdict.
func printSummary(stdout io.Writer, sum results.Summary, runs []*runner.Run) {
	cfg := sum.Config
	results.PrintTable(stdout, sum.Results)
	results.PrintCost(stdout, sum.Results)
	results.PrintRecipe(stdout, cfg, sum.Results)
	results.PrintMix(stdout, cfg, runs)
	if cfg.Faults != nil {
		results.PrintFaultLog(stdout, sum)
	}
	fmt.Fprintln(stdout, results.Verdict(sum))
	for _, f := range sum.Failures {
		fmt.Fprintln(stdout, "  "+f)
	}
}

// writeOutputs writes -json and -report; exitRun when one failed.
func writeOutputs(sum results.Summary, runs []*runner.Run, stderr io.Writer) int {
	code := exitOK
	if sum.Config.JSON != "" {
		if err := results.WriteJSON(sum.Config.JSON, sum); err != nil {
			fmt.Fprintln(stderr, "stress: -json:", err)
			code = exitRun
		}
	}
	if sum.Config.Report != "" {
		if err := results.WriteReport(sum.Config.Report, sum, runs); err != nil {
			fmt.Fprintln(stderr, "stress: -report:", err)
			code = exitRun
		}
	}
	return code
}
