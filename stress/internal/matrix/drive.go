// Package matrix runs a stress matrix (stress -matrix): every cell of a
// plan (internal/cells) on its servers, each implementation in turn
// through internal/runner, and writes after every cell the figures (JSON)
// and a report with heat maps (internal/report), so that a matrix left to
// run unattended can be read while it runs, survives an interruption, and
// resumes (-matrix-resume) where it stopped.
//
// Files: drive.go (servers, cells, order, resume), result.go (figures of
// a cell, ratios, medians of repetitions), output.go (JSON, table,
// report).
package matrix

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/tierlock/tierlock/internal/redisserver"
	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/stress/internal/cells"
	"github.com/tierlock/tierlock/stress/internal/fleet"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/results"
	"github.com/tierlock/tierlock/stress/internal/runner"
)

// Exit statuses, as the stress command's.
const (
	ExitOK        = 0
	ExitViolation = 1
	ExitRun       = 3
)

// Options are what a matrix run needs besides its plan.
type Options struct {
	Spec cells.Spec
	// Base is the configuration every cell starts from (the stress flags
	// that are not axes: implementations, hold mode, hand-off bounds,
	// session timeout, -zk, outputs).
	Base   runner.Config
	Exe    string    // the worker executable
	Stdout io.Writer // the final table and verdict
	Stderr io.Writer // progress, one line per cell

	// redis is the redis-server of the redsync runs, which Run starts
	// once for every cell when redsync is among the implementations.
	redis *redisserver.Server
}

// Run carries out the matrix and returns the exit status: 0 when every cell
// ran and passed the checker, 1 on a violation or lock error in some cell,
// 3 when cells could not be run or the run was interrupted (what ran is in
// the outputs either way).
func Run(ctx context.Context, o Options) int {
	_, code := RunSummary(ctx, o)
	return code
}

// RunSummary is Run that also returns the matrix's figures as written to
// its JSON file (nil when the run could not start), for a caller that
// reads them further (stress -demo).
func RunSummary(ctx context.Context, o Options) (*Summary, int) {
	spec, base := o.Spec, o.Base
	sum := &Summary{Started: time.Now().UTC(), Spec: spec, Impls: base.Impls, Base: base, Results: []Result{}}
	done := map[string]bool{}
	if spec.Resume {
		var err error
		if done, err = sum.resume(base.JSON); err != nil {
			fmt.Fprintf(o.Stderr, "stress: -matrix-resume: %v\n", err)
			return nil, ExitRun
		}
		fmt.Fprintf(o.Stderr, "stress: matrix: resuming with %d cell(s) from %s\n", len(done), base.JSON)
	}
	if slices.Contains(base.Impls, proto.Redsync) {
		rds, err := runner.StartRedis(ctx, o.Stderr)
		if err != nil {
			fmt.Fprintf(o.Stderr, "stress: matrix: %s\n", trimRun(err))
			return nil, ExitRun
		}
		defer rds.Close()
		o.redis = rds
	}
	all := spec.Cells()
	fmt.Fprintf(o.Stderr, "stress: matrix %s: %d cells x %d implementations, each %v measured after a %v warm-up "+
		"(probes %v); this will take about %s\n",
		spec.Preset, len(all), len(base.Impls), spec.Duration, spec.RunWarmup, spec.Probe,
		Roughly(spec.Estimate(len(base.Impls), PerRunOverhead, PerTopologyOverhead)))
	failed := false
	for i := 0; i < len(all) && ctx.Err() == nil; {
		j := i
		for j < len(all) && all[j].Topology == all[i].Topology {
			j++
		}
		// A cell's index within its topology rotates its order; it stays
		// the same when a resumed matrix skips the cells before it.
		if !runTopology(ctx, o, sum, all[i:j], done, len(all)) {
			failed = true
		}
		i = j
	}
	sum.finish(len(all), ctx.Err() != nil)
	sum.save(o.Stderr)
	printTable(o.Stdout, sum)
	switch {
	case sum.violated():
		return sum, ExitViolation
	case failed || !sum.Complete:
		return sum, ExitRun
	}
	return sum, ExitOK
}

// runTopology runs the cells of block (one topology's) not done yet, on
// servers started for them, saving the outputs after each; false when a
// cell could not be run.
func runTopology(ctx context.Context, o Options, sum *Summary, block []cells.Cell, done map[string]bool, total int) (ok bool) {
	todo := slices.DeleteFunc(slices.Clone(block), func(c cells.Cell) bool { return done[c.Key()] })
	if len(todo) == 0 {
		return true
	}
	topo := block[0].Topology
	servers, cluster, stop, err := serversFor(ctx, topo, o.Base, o.Stderr)
	if err != nil {
		fmt.Fprintf(o.Stderr, "stress: matrix: %s: %v\n", topo, err)
		for _, c := range todo {
			sum.Results = append(sum.Results, Result{Cell: c, Key: c.Key(), Leader: -1, Error: err.Error()})
		}
		sum.finish(total, false)
		sum.save(o.Stderr)
		return false
	}
	defer stop()
	if o.Spec.Warmup > 0 {
		warm := o
		warm.Spec.Duration, warm.Spec.RunWarmup, warm.Spec.Probe = o.Spec.Warmup, 0, 0
		res := runCell(ctx, warm, servers, cluster, cells.Cell{Topology: topo, Procs: 2, Goroutines: 8, Paths: 1}, 0)
		fmt.Fprintln(o.Stderr, "stress: matrix: warm-up (not recorded):", progressLine(res, 0, total))
	}
	ok = true
	for k, c := range block {
		if ctx.Err() != nil {
			break
		}
		if done[c.Key()] {
			continue
		}
		res := runCell(ctx, o, servers, cluster, c, k)
		if ctx.Err() != nil && !res.complete() {
			break // interrupted: not a result
		}
		sum.Results = append(sum.Results, res)
		fmt.Fprintln(o.Stderr, "stress: matrix:", progressLine(res, len(sum.Results), total))
		if res.Error != "" {
			ok = false
		}
		sum.finish(total, false)
		sum.save(o.Stderr)
	}
	return ok
}

// Estimated overheads, for the announced duration and the documentation:
// a run's workers start, connect and make their paths, and after the run
// gozk's queued waiters drain (zk.Lock cannot be abandoned: 8,000 waiters
// on one path take tens of seconds) and the holds are checked and cleaned
// up: measured at about 0.3 s for a 2 x 8 cell on one path, guessed at
// several seconds for the 1,000-path and 8 x 1,000 cells; 4 s on average.
// A server starts in about 10 s.
const (
	PerRunOverhead      = 4 * time.Second
	PerTopologyOverhead = 10 * time.Second
)

// Roughly writes an estimated duration to the minute: 4h05m, 12m, 40s.
func Roughly(d time.Duration) string {
	switch {
	case d >= time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%dm", int(d.Round(time.Minute).Minutes()))
	}
	return d.Round(time.Second).String()
}

// serversFor starts (or, for External, names) the servers of topo. The
// cluster is nil for servers given by -zk.
func serversFor(ctx context.Context, topo cells.Topology, base runner.Config, stderr io.Writer) ([]string, *zkserver.Cluster, func(), error) {
	if topo == cells.External {
		if len(base.ZK) > 0 {
			return base.ZK, nil, func() {}, nil
		}
		c, ok := zkserver.FromEnv()
		if !ok {
			return nil, nil, nil, fmt.Errorf("no external servers (-zk or $%s)", zkserver.EnvServers)
		}
		return c.Addrs(), c, func() {}, nil
	}
	n := 1
	if topo == cells.Ensemble {
		n = 3
	}
	fmt.Fprintf(stderr, "stress: matrix: starting a local ZooKeeper (%s, %d server(s))\n", topo, n)
	sctx, cancel := context.WithTimeout(ctx, 120*time.Second)
	defer cancel()
	c, err := zkserver.StartEnsemble(sctx, n)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("start ZooKeeper: %w", err)
	}
	return c.Addrs(), c, func() { c.Close() }, nil
}

// runCell runs every implementation in one cell, in an order rotated by
// the cell's place in the grid and its repetition (orderFor): the
// machine's load drifts, and an implementation that always ran first (or
// right after the baseline's thousands of nodes were cleaned up) would
// carry that drift into every ratio. Repetitions (-matrix-repeat) then see
// each order.
func runCell(ctx context.Context, o Options, servers []string, cluster *zkserver.Cluster, c cells.Cell, index int) (res Result) {
	cfg := o.Base
	cfg.Procs, cfg.Goroutines, cfg.Paths, cfg.Hold = c.Procs, c.Goroutines, c.Paths, c.Hold
	cfg.Duration, cfg.Acquisitions = o.Spec.Duration, 0
	cfg.Warmup, cfg.Probe = o.Spec.RunWarmup, o.Spec.Probe
	// After the run, gozk's queued waiters still take the lock in turn
	// (zk.Lock cannot be abandoned): 8,000 of them on one path take tens of
	// seconds. A run past this is cut short and the cell recorded as
	// interrupted.
	cfg.Timeout = o.Spec.RunWarmup + o.Spec.Duration + 3*time.Minute
	cfg.ZK, cfg.Spread = servers, true
	cfg.Root = fmt.Sprintf("%s/matrix-%d-%d", o.Base.Root, time.Now().UnixNano(), index)
	row, col := o.Spec.Place(c)
	order := orderFor(cfg.Impls, row, col, c.Rep)
	cfg.Impls = order
	res = Result{Cell: c, Key: c.Key(), Order: order, Started: time.Now().UTC(), Leader: -1}
	defer func() { res.Seconds = time.Since(res.Started).Seconds() }()

	r := runner.New(cfg, o.Exe, o.Stderr, false)
	defer r.Close()
	if cluster != nil {
		r.UseCluster(cluster) // the servers' processor time can be read
	}
	if o.redis != nil {
		r.UseRedis(o.redis)
	}
	if err := r.Setup(ctx); err != nil {
		res.Error = trimRun(err)
		return res
	}
	if cluster != nil && cluster.Size() > 1 {
		if i, err := cluster.Leader(ctx); err == nil {
			res.Leader = i
		}
	}
	var full []results.Impl
	for _, im := range order {
		run, err := r.RunImpl(ctx, im)
		if err != nil {
			res.Error = fmt.Sprintf("%s: %s", im, trimRun(err))
			return res
		}
		full = append(full, results.FiguresOf(run, cfg))
		res.Impls = append(res.Impls, figuresOf(run, full[len(full)-1]))
		if run.Interrupted {
			return res
		}
	}
	compare(res.Impls, full)
	return res
}

// orderFor is the order of impls in the cell at row and col of the grid
// (Spec.Place), in repetition rep: rotated by all three, so that along a
// row and down a column of a heat map every implementation runs in every
// position (a Latin square). Rotated by the cell's index alone, as it was,
// the order repeated down each column whenever the columns were a multiple
// of the implementations (6 and 3 in the full preset): strict mode then
// always ran last on one path with 1 ms holds, and first with none.
func orderFor(impls []proto.Impl, row, col, rep int) []proto.Impl {
	if len(impls) == 0 {
		return nil
	}
	shift := (max(row, 0) + max(col, 0) + rep) % len(impls)
	return append(slices.Clone(impls[shift:]), impls[:shift]...)
}

// complete reports whether every implementation of the cell ran to its end.
func (r Result) complete() bool {
	for _, f := range r.Impls {
		if f.Interrupted {
			return false
		}
	}
	return len(r.Impls) == len(r.Order) && len(r.Order) > 0
}

func trimRun(err error) string {
	s := err.Error()
	if p := fleet.ErrRun.Error() + ": "; len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}

// progressLine is one cell's line on stderr.
func progressLine(r Result, n, of int) string {
	c := r.Cell
	head := fmt.Sprintf("[%d/%d] %s %d×%d, %d path(s), %s, rep %d:", n, of, c.Topology, c.Procs, c.Goroutines, c.Paths, cells.HoldLabel(c.Hold), c.Rep+1)
	if r.Error != "" {
		return head + " error: " + r.Error
	}
	for _, f := range r.Impls {
		head += fmt.Sprintf(" %s %.0f/s", f.Impl, f.PerSec)
		if f.Impl != proto.Gozk && f.Ratio > 0 {
			head += fmt.Sprintf(" (%.2f×)", f.Ratio)
		}
		if !f.OK {
			head += " FAILED: " + f.Verdict
		}
		head += ";"
	}
	return head[:len(head)-1] + fmt.Sprintf(" [%.0fs]", r.Seconds)
}
