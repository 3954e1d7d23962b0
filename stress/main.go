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
	runErr := func(err error) string { return strings.TrimPrefix(err.Error(), fleet.ErrRun.Error()+": ") }
	r := runner.New(cfg, exe, stderr, !cfg.Quiet && progress.IsTerminal(stderr))
	defer r.Close()
	if err := r.Setup(ctx); err != nil {
		fmt.Fprintln(stderr, "stress:", runErr(err))
		return exitRun
	}
	sum := results.Summary{Started: time.Now().UTC(), Config: cfg, Servers: r.Servers(), Local: r.Started()}
	var runs []*runner.Run
	for _, name := range cfg.Impls {
		if ctx.Err() != nil {
			break
		}
		run, err := r.RunImpl(ctx, name)
		if err != nil {
			fmt.Fprintf(stderr, "stress: %s: %s\n", name, runErr(err))
			return exitRun
		}
		res := results.FiguresOf(run, cfg)
		fmt.Fprintf(stderr, "stress: %s: %s, %d violations in %d holds\n",
			name, results.CountLine(res), res.Check.Violations(), res.Check.Holds)
		runs = append(runs, run)
		sum.Results = append(sum.Results, res)
		if cfg.Faults != nil {
			if sum.Faults == nil {
				sum.Faults = []*fault.Event{}
			}
			sum.Faults = append(sum.Faults, run.Faults...)
		}
	}
	results.Compare(sum.Results)
	sum.Failures = append(results.Failures(sum.Results), results.FaultFailures(sum.Faults)...)
	violated := len(sum.Failures) > 0
	incomplete := len(sum.Results) < len(cfg.Impls)
	for _, res := range sum.Results {
		if res.Interrupted {
			incomplete = true
			sum.Failures = append(sum.Failures, fmt.Sprintf("%s: interrupted after %.1fs (what ran was checked)", res.Impl, res.ElapsedSec))
		}
	}
	if len(sum.Results) < len(cfg.Impls) {
		sum.Failures = append(sum.Failures, fmt.Sprintf("interrupted: %d of %d implementations ran", len(sum.Results), len(cfg.Impls)))
	}
	sum.OK = !violated && !incomplete

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
	code := exitOK
	switch {
	case violated:
		code = exitViolation
	case incomplete:
		code = exitRun
	}
	if cfg.JSON != "" {
		if err := results.WriteJSON(cfg.JSON, sum); err != nil {
			fmt.Fprintln(stderr, "stress: -json:", err)
			code = max(code, exitRun)
		}
	}
	if cfg.Report != "" {
		if err := results.WriteReport(cfg.Report, sum, runs); err != nil {
			fmt.Fprintln(stderr, "stress: -report:", err)
			code = max(code, exitRun)
		}
	}
	return code
}
