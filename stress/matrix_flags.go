package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/stress/internal/cells"
	"github.com/tierlock/tierlock/stress/internal/matrix"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/runner"
)

// matrixFlags are the flags of a matrix run (-matrix full|quick): one
// command that runs every cell of processes × goroutines × lock paths ×
// critical section on a standalone server and on a three-server ensemble,
// each implementation per cell, and writes one JSON file and one report
// with heat maps of the ratios to gozk. The -matrix-* flags restrict or
// replace a preset's axes.
type matrixFlags struct {
	preset, servers, procs, goroutines, paths, holds *string
	repeat                                           *int
	warmup                                           *time.Duration
	resume                                           *bool
}

func defineMatrixFlags(fs *flag.FlagSet) *matrixFlags {
	return &matrixFlags{
		preset:     fs.String("matrix", "", "run a matrix of cells instead of one run: "+presetHelp()+"; see -matrix-*"),
		servers:    fs.String("matrix-servers", "", "matrix: standalone, ensemble, or both as standalone,ensemble (default: the preset's; with -zk: those servers)"),
		procs:      fs.String("matrix-procs", "", "matrix: worker processes per cell, a comma-separated list (default: the preset's)"),
		goroutines: fs.String("matrix-goroutines", "", "matrix: goroutines per process, a list (default: the preset's)"),
		paths:      fs.String("matrix-paths", "", "matrix: lock paths, a list (default: the preset's)"),
		holds:      fs.String("matrix-holds", "", "matrix: critical sections, a list such as 0,1ms (default: the preset's)"),
		repeat:     fs.Int("matrix-repeat", 1, "matrix: runs of every cell, each with the implementations in another order; ratios are their median"),
		warmup:     fs.Duration("matrix-warmup", 0, "matrix: an unrecorded run of each implementation after the servers start (default: the preset's, 2-3s; 0: none)"),
		resume:     fs.Bool("matrix-resume", false, "matrix: keep the cells already in the -json file and run only the others"),
	}
}

// apply turns the matrix flags into c.Matrix (nil without -matrix). The
// single-run shape flags do not go with it; -duration is the run of each
// implementation in each cell; -impl defaults to tier, tier-handoff, gozk.
func (m *matrixFlags) apply(c *runner.Config, set map[string]bool) error {
	if !set["matrix"] {
		for _, f := range []string{"matrix-servers", "matrix-procs", "matrix-goroutines", "matrix-paths", "matrix-holds", "matrix-repeat", "matrix-warmup", "matrix-resume"} {
			if set[f] {
				return usageErr("-%s needs -matrix", f)
			}
		}
		return nil
	}
	for _, f := range []string{"procs", "goroutines", "paths", "hold", "acquisitions", "fault", "mix", "recipe", "timeout"} {
		if set[f] {
			return usageErr("-matrix and -%s do not go together: a matrix sets the shape of each cell (see -matrix-*)", f)
		}
	}
	spec, err := cells.Preset(*m.preset)
	if err != nil {
		return usageErr("-matrix: %s", specMsg(err))
	}
	if err := m.axes(&spec, c, set); err != nil {
		return err
	}
	m.runs(&spec, c, set)
	if err := spec.Check(); err != nil {
		return usageErr("%s", specMsg(err))
	}
	if spec.Resume && c.JSON == "" {
		return usageErr("-matrix-resume needs -json (the file to resume from)")
	}
	if !set["impl"] {
		c.Impls = []proto.Impl{proto.Tier, proto.TierHandoff, proto.Gozk}
	}
	if slices.Contains(c.Impls, proto.Nolock) {
		return usageErr("-matrix: nolock is a self-test of the checker, not a matrix implementation")
	}
	c.Matrix = &spec
	return nil
}

// axes sets the preset's axes the flags name: servers, processes,
// goroutines, paths, critical sections.
func (m *matrixFlags) axes(spec *cells.Spec, c *runner.Config, set map[string]bool) error {
	_, fromEnv := zkserver.FromEnv()
	if len(c.ZK) > 0 || fromEnv {
		if set["matrix-servers"] {
			return usageErr("-matrix-servers starts local servers; it does not go with -zk or $%s", zkserver.EnvServers)
		}
		spec.Topologies = []cells.Topology{cells.External}
	}
	var err error
	if set["matrix-servers"] {
		if spec.Topologies, err = cells.Topologies(*m.servers); err != nil {
			return usageErr("%s", specMsg(err))
		}
	}
	for _, axis := range []struct {
		flag string
		v    *string
		dst  *[]int
	}{{"matrix-procs", m.procs, &spec.Procs}, {"matrix-goroutines", m.goroutines, &spec.Goroutines}, {"matrix-paths", m.paths, &spec.Paths}} {
		if set[axis.flag] {
			if *axis.dst, err = cells.Ints("-"+axis.flag, *axis.v); err != nil {
				return usageErr("%s", specMsg(err))
			}
		}
	}
	if set["matrix-holds"] {
		if spec.Holds, err = cells.Durations("-matrix-holds", *m.holds); err != nil {
			return usageErr("%s", specMsg(err))
		}
	}
	return nil
}

// runs sets how each cell runs: the single-run flags given override the
// preset's run length, warm-ups and probe.
func (m *matrixFlags) runs(spec *cells.Spec, c *runner.Config, set map[string]bool) {
	if set["duration"] {
		spec.Duration = c.Duration
	}
	if set["warmup"] {
		spec.RunWarmup = c.Warmup
	}
	if set["probe"] {
		spec.Probe = c.Probe
	}
	spec.Repeat, spec.Resume = *m.repeat, *m.resume
	if set["matrix-warmup"] {
		spec.Warmup = *m.warmup
	}
}

// presetHelp describes the presets for -h: cells, run length, estimate.
func presetHelp() string {
	var out []string
	for _, name := range cells.PresetNames() {
		s, _ := cells.Preset(name)
		out = append(out, fmt.Sprintf("%s (%d cells x 3 implementations, each %v measured after a %v warm-up; about %v)",
			name, len(s.Cells()), s.Duration, s.RunWarmup,
			matrix.Roughly(s.Estimate(3, matrix.PerRunOverhead, matrix.PerTopologyOverhead))))
	}
	return strings.Join(out, " or ")
}

// specMsg is a cells error without its "matrix: " mark, for a usage line.
func specMsg(err error) string {
	return strings.TrimPrefix(err.Error(), cells.ErrSpec.Error()+": ")
}

// runMatrix is the stress command with -matrix.
func runMatrix(ctx context.Context, cfg runner.Config, stdout, stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return matrix.Run(ctx, matrix.Options{Spec: *cfg.Matrix, Base: cfg, Exe: exe, Stdout: stdout, Stderr: stderr})
}
