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
)

func main() {
	if spec, ok := os.LookupEnv(workerEnv); ok {
		os.Exit(workerMain(spec))
	}
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
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	r := &runner{cfg: cfg, exe: exe, stderr: stderr, showBar: !cfg.Quiet && isTerminal(stderr)}
	defer r.close()
	if err := r.setup(ctx); err != nil {
		fmt.Fprintln(stderr, "stress:", strings.TrimPrefix(err.Error(), errRun.Error()+": "))
		return exitRun
	}
	sum := summary{Started: time.Now().UTC(), Config: cfg, Servers: r.servers, Local: r.started}
	var runs []*implRun
	for _, name := range cfg.Impls {
		if ctx.Err() != nil {
			break
		}
		run, err := r.runImpl(ctx, name)
		if err != nil {
			fmt.Fprintf(stderr, "stress: %s: %s\n", name, strings.TrimPrefix(err.Error(), errRun.Error()+": "))
			return exitRun
		}
		res := figuresOf(run, cfg)
		fmt.Fprintf(stderr, "stress: %s: %d acquisitions in %.1fs, %d violations\n",
			name, res.Acquisitions, res.ElapsedSec, res.Check.Violations())
		runs = append(runs, run)
		sum.Results = append(sum.Results, res)
		if cfg.Faults != nil {
			if sum.Faults == nil {
				sum.Faults = []*faultEvent{}
			}
			sum.Faults = append(sum.Faults, run.faults...)
		}
	}
	compare(sum.Results)
	sum.Failures = append(failures(sum.Results), faultFailures(sum.Faults)...)
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

	printTable(stdout, sum.Results)
	printMix(stdout, cfg, runs)
	if cfg.Faults != nil {
		printFaultLog(stdout, sum)
	}
	fmt.Fprintln(stdout, verdict(sum))
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
		if err := writeJSON(cfg.JSON, sum); err != nil {
			fmt.Fprintln(stderr, "stress: -json:", err)
			code = max(code, exitRun)
		}
	}
	if cfg.Report != "" {
		if err := writeReport(cfg.Report, sum, runs); err != nil {
			fmt.Fprintln(stderr, "stress: -report:", err)
			code = max(code, exitRun)
		}
	}
	return code
}

// verdict is the one-line outcome.
func verdict(s summary) string {
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
	faults := ""
	if s.Config.Faults != nil {
		recovered := 0
		for _, ev := range s.Faults {
			if ev.Recovered && ev.Failure == "" {
				recovered++
			}
		}
		faults = fmt.Sprintf("; %d fault(s) injected, %d recovered from", len(s.Faults), recovered)
	}
	switch {
	case s.OK:
		return fmt.Sprintf("PASS: mutual exclusion held: 0 violations in %d holds checked (%d implementation(s))%s",
			holds, len(s.Results), faults)
	case viol > 0:
		return fmt.Sprintf("FAIL: %d violation(s) in %d holds checked%s", viol, holds, faults)
	case errs > 0:
		return fmt.Sprintf("FAIL: 0 violations in %d holds checked, but %d lock error(s)%s", holds, errs, faults)
	case len(faultFailures(s.Faults)) > 0:
		return fmt.Sprintf("FAIL: 0 violations in %d holds checked, but a fault was not recovered from%s", holds, faults)
	}
	return fmt.Sprintf("INCOMPLETE: 0 violations in %d holds checked, but the run did not complete", holds)
}
