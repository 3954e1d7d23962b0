// Package cells is the plan of a stress matrix (stress -matrix): the axes
// (servers, processes, goroutines, lock paths, critical section), the
// named presets, how flags restrict them, and the cells they make, each
// with a key by which a resumed matrix knows what it has already run.
//
// It has no dependencies inside stress, so that both the flags and the
// matrix driver (internal/matrix) can use it.
package cells

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrSpec marks a bad matrix specification (a usage error).
var ErrSpec = errors.New("matrix")

// Topology is where a cell's workers find ZooKeeper.
type Topology string

// Topologies.
const (
	// Standalone is one local server that the matrix starts.
	Standalone Topology = "standalone"
	// Ensemble is three local servers; the worker processes are spread
	// over the members, worker i connected to member i mod 3 only.
	Ensemble Topology = "ensemble"
	// External is the servers given by -zk or $TIERLOCK_ZK_SERVERS.
	External Topology = "external"
)

// Spec is a matrix: its axes, how often each cell runs, and whether a
// previous run's results are taken over.
type Spec struct {
	Preset     string          `json:"preset"`
	Topologies []Topology      `json:"topologies"`
	Procs      []int           `json:"procs"`
	Goroutines []int           `json:"goroutines"`
	Paths      []int           `json:"paths"`
	Holds      []time.Duration `json:"holds_ns"`
	// Duration is each implementation's measured window in each cell,
	// after a warm-up of RunWarmup; Probe is the length of each probe of
	// the servers' limits after each run (0: none).
	Duration  time.Duration `json:"duration_ns"`
	RunWarmup time.Duration `json:"run_warmup_ns"`
	Probe     time.Duration `json:"probe_ns"`
	// Warmup is a run of each implementation, not recorded, after a
	// topology's servers start: a fresh JVM is slow for its first seconds
	// and would handicap whichever implementation ran first. 0: none.
	Warmup time.Duration `json:"warmup_ns"`
	// Repeat runs every cell this many times; the implementations run in
	// a rotated order each time, so that none always meets the same load.
	Repeat int `json:"repeat"`
	// Resume takes over the cells already in the -json file.
	Resume bool `json:"-"`
}

// Presets: full is the whole matrix, each run long enough for a steady
// window (a 5s warm-up, then 20s measured: the start-up of 1,000
// goroutines per process stays out of it); quick is a subset for a first
// look that includes the 2 x 8 cell where strict was once seen below
// zk.Lock.
var presets = map[string]Spec{
	"full": {
		Topologies: []Topology{Standalone, Ensemble},
		Procs:      []int{1, 4, 8}, Goroutines: []int{1, 8, 64, 1000}, Paths: []int{1, 16, 1000},
		Holds:    []time.Duration{0, time.Millisecond},
		Duration: 20 * time.Second, RunWarmup: 5 * time.Second, Probe: 2 * time.Second,
		Warmup: 3 * time.Second, Repeat: 1,
	},
	"quick": {
		Topologies: []Topology{Standalone, Ensemble},
		Procs:      []int{2, 4}, Goroutines: []int{8, 64}, Paths: []int{1},
		Holds:    []time.Duration{0},
		Duration: 2 * time.Second, RunWarmup: 2 * time.Second, Probe: time.Second,
		Warmup: 2 * time.Second, Repeat: 1,
	},
}

// PresetNames lists the presets.
func PresetNames() []string { return []string{"full", "quick"} }

// Preset returns the named preset.
func Preset(name string) (Spec, error) {
	s, ok := presets[name]
	if !ok {
		return Spec{}, fmt.Errorf("%w: unknown preset %q (want %s)", ErrSpec, name, strings.Join(PresetNames(), " or "))
	}
	s.Preset = name
	s.Topologies = slices.Clone(s.Topologies)
	s.Procs, s.Goroutines, s.Paths = slices.Clone(s.Procs), slices.Clone(s.Goroutines), slices.Clone(s.Paths)
	s.Holds = slices.Clone(s.Holds)
	return s, nil
}

// Ints parses a comma-separated list of positive numbers (an axis flag).
func Ints(flag, v string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		n, err := strconv.Atoi(part)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%w: %s: %q is not a positive number", ErrSpec, flag, part)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// Durations parses a comma-separated list of durations ≥ 0 (0 may be
// written without a unit).
func Durations(flag, v string) ([]time.Duration, error) {
	var out []time.Duration
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		d, err := time.ParseDuration(part)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("%w: %s: %q is not a duration ≥ 0 (such as 0 or 1ms)", ErrSpec, flag, part)
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out, nil
}

// Topologies parses -matrix-servers: standalone, ensemble or both.
func Topologies(v string) ([]Topology, error) {
	var out []Topology
	for _, part := range strings.Split(v, ",") {
		t := Topology(strings.TrimSpace(part))
		if t != Standalone && t != Ensemble {
			return nil, fmt.Errorf("%w: -matrix-servers: %q is neither standalone nor ensemble", ErrSpec, part)
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// Cell is one point of the matrix, and which repetition of it.
type Cell struct {
	Topology   Topology      `json:"topology"`
	Procs      int           `json:"procs"`
	Goroutines int           `json:"goroutines"`
	Paths      int           `json:"paths"`
	Hold       time.Duration `json:"hold_ns"`
	Rep        int           `json:"rep"` // 0-based
}

// Key names the cell (repetition included) in a results file.
func (c Cell) Key() string {
	return fmt.Sprintf("%s/p%d/g%d/l%d/h%s/r%d", c.Topology, c.Procs, c.Goroutines, c.Paths, c.Hold, c.Rep)
}

// Point names the cell without its repetition: the repetitions of one
// point are summarized together.
func (c Cell) Point() string {
	c.Rep = 0
	k := c.Key()
	return k[:strings.LastIndex(k, "/")]
}

// Shape is the cell's row label in a heat map: processes x goroutines.
func (c Cell) Shape() string { return fmt.Sprintf("%d×%d", c.Procs, c.Goroutines) }

// Load is the cell's column label in a heat map: paths and critical section.
func (c Cell) Load() string {
	return fmt.Sprintf("%d path%s, %s", c.Paths, map[bool]string{true: "", false: "s"}[c.Paths == 1], HoldLabel(c.Hold))
}

// HoldLabel writes a critical-section length for a label: "0" or "1ms".
func HoldLabel(d time.Duration) string {
	if d == 0 {
		return "hold 0"
	}
	return "hold " + d.String()
}

// Cells enumerates the matrix: topology outermost (each needs its own
// servers), then repetition, so that a run cut short has every point
// once before any twice; within, processes, goroutines, paths, hold.
func (s Spec) Cells() []Cell {
	var out []Cell
	for _, t := range s.Topologies {
		for rep := range max(s.Repeat, 1) {
			for _, p := range s.Procs {
				for _, g := range s.Goroutines {
					for _, l := range s.Paths {
						for _, h := range s.Holds {
							out = append(out, Cell{Topology: t, Procs: p, Goroutines: g, Paths: l, Hold: h, Rep: rep})
						}
					}
				}
			}
		}
	}
	return out
}

// Place returns c's row (its processes × goroutines) and column (its
// paths × critical section) in the grid of s, the layout of the heat maps;
// -1, -1 for a cell not on s's axes.
func (s Spec) Place(c Cell) (row, col int) {
	p, g := slices.Index(s.Procs, c.Procs), slices.Index(s.Goroutines, c.Goroutines)
	l, h := slices.Index(s.Paths, c.Paths), slices.Index(s.Holds, c.Hold)
	if p < 0 || g < 0 || l < 0 || h < 0 {
		return -1, -1
	}
	return p*len(s.Goroutines) + g, l*len(s.Holds) + h
}

// Check reports what is wrong with s.
func (s Spec) Check() error {
	switch {
	case len(s.Topologies) == 0 || len(s.Procs) == 0 || len(s.Goroutines) == 0 || len(s.Paths) == 0 || len(s.Holds) == 0:
		return fmt.Errorf("%w: an axis is empty", ErrSpec)
	case s.Duration <= 0:
		return fmt.Errorf("%w: the run per implementation and cell must be positive, got %v", ErrSpec, s.Duration)
	case s.Warmup < 0:
		return fmt.Errorf("%w: -matrix-warmup must not be negative, got %v", ErrSpec, s.Warmup)
	case s.RunWarmup < 0 || s.Probe < 0:
		return fmt.Errorf("%w: the warm-up and the probe of a run must not be negative, got %v and %v", ErrSpec, s.RunWarmup, s.Probe)
	case s.Repeat < 1:
		return fmt.Errorf("%w: -matrix-repeat must be at least 1, got %d", ErrSpec, s.Repeat)
	}
	return nil
}

// Estimate is how long s takes with impls implementations per cell, given
// the per-run overhead (start the workers, make the paths, check, clean
// up) and a server start per topology: each run is its warm-up, its
// window and its probes (the limits: 2.25 probe lengths).
func (s Spec) Estimate(impls int, perRun, perTopology time.Duration) time.Duration {
	n := len(s.Cells())
	warm := time.Duration(0)
	if s.Warmup > 0 {
		warm = time.Duration(impls) * (s.Warmup + perRun)
	}
	run := s.RunWarmup + s.Duration + s.Probe*9/4 + perRun
	return time.Duration(n*impls)*run + time.Duration(len(s.Topologies))*(perTopology+warm)
}
