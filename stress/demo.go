package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/stress/internal/matrix"
	"github.com/tierlock/tierlock/stress/internal/proto"
)

// demoConfig is a run of stress -demo: README's speed claims, each shape
// run as a matrix of one cell (stress -matrix) with repeats, and the
// ratios with their spread set beside what README says.
type demoConfig struct {
	Repeat int
	// Duration and Warmup are each implementation's measured window and
	// the warm-up before it, in every shape (0: each shape's own).
	Duration, Warmup time.Duration
	Goroutines       int      // per process, in the keyed shapes
	Paths            int      // keys, in the keyed shapes
	Shapes           []string // the shapes to run, in demoShapes' order
	Out              string   // directory of each shape's matrix JSON file
}

const demoUsageHead = `Usage: stress -demo [flags]

stress -demo runs the shapes README gives speed figures for, each as a
stress matrix of one cell (stress -matrix, -matrix-repeat), and sets each
ratio, as the median of -demo-repeat runs with its range, beside README's
figure:

  keyed     4 processes x 1,000 goroutines x 1,000 keys on one server:
            tier, zk.Lock (gozk) and redsync (README: 5.3x zk.Lock, 1.8x
            redsync, 0.08 requests per acquisition against zk.Lock's 5,
            0.22x its CPU)
  ensemble  the same shape on three servers: tier and zk.Lock (README: 7.0x)
  onepath   4 processes x 64 goroutines on one path, one server: tier with
            hand-off, tier strict and zk.Lock (README: hand-off "tens of
            times faster on one busy path")

Every critical section is empty (-hold 0), as in README's figures. Each
repeat runs the implementations in another order (rotated), so that the
machine's drift does not always meet the same one; the per-repeat ratios
are of implementations run one after the other in the same cell. The
checker checks every hold of every run: the demo fails (exit 1) on a
mutual-exclusion violation or a lock error.

Every shape runs at README's scale (-demo-goroutines and -demo-keys scale
the keyed ones down). README's figures were measured with 20s windows
after 5s warm-ups; the demo's are shorter (4s after 2s keyed, 2s after 1s
on one path), to run in minutes on two cores; -duration 20s -warmup 5s
runs README's windows (each run 25s instead of 6s or 3s). Each shape's
heading gives the stress -matrix command that runs it alone.

It starts its own servers (a local standalone ZooKeeper, a three-server
ensemble, a redis-server): README's figures are of those, so there is
no -zk, and $TIERLOCK_ZK_SERVERS is refused.

Exit status: 0 every run passed the checker, 1 a violation or lock error,
2 bad usage, 3 a run could not be carried out.

Flags:
`

// parseDemoFlags reads the command line of stress -demo.
func parseDemoFlags(args []string, stderr io.Writer) (demoConfig, error) {
	c := demoConfig{}
	fs := flag.NewFlagSet("stress -demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, demoUsageHead)
		fs.PrintDefaults()
	}
	fs.Bool("demo", true, "run README's shapes against its claims (this mode)")
	fs.IntVar(&c.Repeat, "demo-repeat", 3, "runs of each shape, the implementations' order rotated each run")
	fs.DurationVar(&c.Duration, "duration", 0, "each implementation's measured window in each run (default: the shape's, 4s keyed, 2s on one path; README's: 20s)")
	fs.DurationVar(&c.Warmup, "warmup", 0, "warm-up before each window, not counted (default: the shape's, 2s keyed, 1s on one path; README's: 5s)")
	fs.IntVar(&c.Goroutines, "demo-goroutines", 1000, "goroutines per process in the keyed shapes (README's: 1000)")
	fs.IntVar(&c.Paths, "demo-keys", 1000, "keys (lock paths) in the keyed shapes (README's: 1000)")
	shapes := fs.String("demo-shapes", "keyed,ensemble,onepath", "the shapes to run, a comma-separated list")
	fs.StringVar(&c.Out, "demo-out", "out", "directory for each shape's matrix JSON file (demo-<shape>.json)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, err
		}
		return c, usageErr("%v", err)
	}
	if fs.NArg() > 0 {
		return c, usageErr("unexpected arguments: %q", fs.Args())
	}
	for _, s := range strings.Split(*shapes, ",") {
		s = strings.TrimSpace(s)
		if !slices.ContainsFunc(demoShapes, func(d demoShape) bool { return d.Name == s }) {
			return c, usageErr("-demo-shapes: %q is not a shape (want keyed, ensemble, onepath)", s)
		}
		c.Shapes = append(c.Shapes, s)
	}
	switch {
	case c.Repeat < 1:
		return c, usageErr("-demo-repeat must be at least 1, got %d", c.Repeat)
	case c.Duration < 0 || c.Warmup < 0:
		return c, usageErr("-duration and -warmup must not be negative, got %v and %v", c.Duration, c.Warmup)
	case c.Goroutines < 1 || c.Paths < 1:
		return c, usageErr("-demo-goroutines and -demo-keys must be at least 1, got %d and %d", c.Goroutines, c.Paths)
	}
	if _, ok := zkserver.FromEnv(); ok {
		return c, usageErr("stress -demo starts its own servers (README's figures are of a local server and a local "+
			"three-server ensemble): unset $%s", zkserver.EnvServers)
	}
	return c, nil
}

// demoShape is one shape README gives figures for: the stress -matrix
// command line that runs it (without the run lengths and repeats) and
// README's claims on it.
type demoShape struct {
	Name  string
	Title func(c demoConfig) string // processes × goroutines × paths, servers
	Args  func(c demoConfig) []string
	// Duration and Warmup are the shape's windows unless -duration and
	// -warmup are given: long enough for the shape to be steady (the
	// keyed shapes start 4,000 goroutines), short enough for the demo to
	// take minutes.
	Duration, Warmup time.Duration
	Claims           []demoClaim
}

// demoClaim is one of README's figures and how a run gives the same
// figure: Of returns it for one repeat (false: not measured).
type demoClaim struct {
	What   string
	README string // as README states it
	Want   float64
	// AtLeast: README's figure is a floor ("tens of times": 10), not a
	// value measured.
	AtLeast bool
	Of      func(r matrix.Result) (float64, bool)
}

// demoShapes are README's shapes, in the order the demo runs them.
var demoShapes = []demoShape{
	{
		Name:  "keyed",
		Title: func(c demoConfig) string { return keyedTitle(c, "1 server") },
		Args: func(c demoConfig) []string {
			return keyedArgs(c, "standalone", "tier,gozk,redsync")
		},
		Duration: 4 * time.Second, Warmup: 2 * time.Second,
		Claims: []demoClaim{
			{What: "tier ÷ zk.Lock acq/s", README: "5.3×", Want: 5.3, Of: ratioOf(proto.Tier, proto.Gozk)},
			{What: "tier ÷ redsync acq/s", README: "1.8×", Want: 1.8, Of: ratioOf(proto.Tier, proto.Redsync)},
			{What: "tier requests/acq", README: "0.08", Want: 0.08, Of: requestsOf(proto.Tier)},
			{What: "zk.Lock requests/acq", README: "5", Want: 5, Of: requestsOf(proto.Gozk)},
			{What: "tier ÷ zk.Lock CPU/acq", README: "0.22×", Want: 0.22, Of: cpuRatioOf(proto.Tier, proto.Gozk)},
		},
	},
	{
		Name:  "ensemble",
		Title: func(c demoConfig) string { return keyedTitle(c, "3 servers") },
		Args: func(c demoConfig) []string {
			return keyedArgs(c, "ensemble", "tier,gozk")
		},
		Duration: 4 * time.Second, Warmup: 2 * time.Second,
		Claims: []demoClaim{
			{What: "tier ÷ zk.Lock acq/s", README: "7.0×", Want: 7.0, Of: ratioOf(proto.Tier, proto.Gozk)},
		},
	},
	{
		Name:  "onepath",
		Title: func(demoConfig) string { return "4×64×1, 1 server" },
		Args: func(demoConfig) []string {
			return []string{"-matrix", "full", "-matrix-servers", "standalone", "-matrix-procs", "4",
				"-matrix-goroutines", "64", "-matrix-paths", "1", "-matrix-holds", "0",
				"-impl", "tier-handoff,tier,gozk"}
		},
		Duration: 2 * time.Second, Warmup: time.Second,
		Claims: []demoClaim{
			{What: "hand-off ÷ zk.Lock", README: "tens of times", Want: 10, AtLeast: true, Of: ratioOf(proto.TierHandoff, proto.Gozk)},
			{What: "hand-off ÷ tier strict", README: "tens of times", Want: 10, AtLeast: true, Of: ratioOf(proto.TierHandoff, proto.Tier)},
			{What: "tier strict ÷ zk.Lock", README: "no figure", Of: ratioOf(proto.Tier, proto.Gozk)},
		},
	},
}

// keyedTitle is a keyed shape's title on servers.
func keyedTitle(c demoConfig, servers string) string {
	return fmt.Sprintf("4×%d×%d, %s", c.Goroutines, c.Paths, servers)
}

// keyedArgs is the keyed shape's command line on servers.
func keyedArgs(c demoConfig, servers, impls string) []string {
	return []string{"-matrix", "full", "-matrix-servers", servers, "-matrix-procs", "4",
		"-matrix-goroutines", strconv.Itoa(c.Goroutines), "-matrix-paths", strconv.Itoa(c.Paths), "-matrix-holds", "0",
		"-impl", impls}
}

// windows are the shape's measured window and warm-up in this run.
func (sh demoShape) windows(c demoConfig) (duration, warmup time.Duration) {
	duration, warmup = sh.Duration, sh.Warmup
	if c.Duration > 0 {
		duration = c.Duration
	}
	if c.Warmup > 0 {
		warmup = c.Warmup
	}
	return duration, warmup
}

// runArgs are what every shape's command line adds: the run lengths, the
// repeats, no probe, a warm-up of the servers.
func (sh demoShape) runArgs(c demoConfig) []string {
	d, w := sh.windows(c)
	return []string{"-matrix-repeat", strconv.Itoa(c.Repeat), "-duration", d.String(),
		"-warmup", w.String(), "-probe", "0", "-matrix-warmup", "2s", "-quiet"}
}

// figure is impl's figures in r (false: it did not run there).
func figure(r matrix.Result, im proto.Impl) (matrix.Figures, bool) {
	i := slices.IndexFunc(r.Impls, func(f matrix.Figures) bool { return f.Impl == im })
	if i < 0 {
		return matrix.Figures{}, false
	}
	return r.Impls[i], true
}

// ratioOf is a's throughput over b's in one repeat.
func ratioOf(a, b proto.Impl) func(matrix.Result) (float64, bool) {
	return func(r matrix.Result) (float64, bool) {
		fa, okA := figure(r, a)
		fb, okB := figure(r, b)
		if !okA || !okB || fb.PerSec <= 0 {
			return 0, false
		}
		return fa.PerSec / fb.PerSec, true
	}
}

// requestsOf is the requests the servers received per acquisition of im.
func requestsOf(im proto.Impl) func(matrix.Result) (float64, bool) {
	return func(r matrix.Result) (float64, bool) {
		f, ok := figure(r, im)
		return f.RequestsPerAcq, ok && f.RequestsPerAcq >= 0
	}
}

// cpuRatioOf is a's client + server CPU per acquisition over b's.
func cpuRatioOf(a, b proto.Impl) func(matrix.Result) (float64, bool) {
	return func(r matrix.Result) (float64, bool) {
		fa, okA := figure(r, a)
		fb, okB := figure(r, b)
		if !okA || !okB || fa.ClientCPUUS < 0 || fa.ServerCPUUS < 0 || fb.ClientCPUUS < 0 || fb.ServerCPUUS < 0 {
			return 0, false
		}
		den := fb.ClientCPUUS + fb.ServerCPUUS
		if den <= 0 {
			return 0, false
		}
		return (fa.ClientCPUUS + fa.ServerCPUUS) / den, true
	}
}

// runDemo is the stress command with -demo.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, err := parseDemoFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "stress: %s\nRun 'stress -demo -h' for the flags.\n", strings.TrimPrefix(err.Error(), "usage: "))
		return exitUsage
	}
	if err := os.MkdirAll(c.Out, 0o755); err != nil {
		fmt.Fprintln(stderr, "stress: -demo-out:", err)
		return exitUsage
	}
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	start, loadStart := time.Now(), load1()
	var rows []demoRow
	code := exitOK
	for _, sh := range demoShapes {
		if !slices.Contains(c.Shapes, sh.Name) || ctx.Err() != nil {
			continue
		}
		file := filepath.Join(c.Out, "demo-"+sh.Name+".json")
		cfg, err := parseFlags(append(append(sh.Args(c), sh.runArgs(c)...), "-json", file), stderr)
		if err != nil { // a shape of this file's that stress refuses
			fmt.Fprintf(stderr, "stress: -demo: %s: %v\n", sh.Name, err)
			return exitUsage
		}
		fmt.Fprintf(stdout, "## %s (%s): %s\n", sh.Title(c), sh.Name, sh.command(c))
		sum, shapeCode := matrix.RunSummary(ctx, matrix.Options{Spec: *cfg.Matrix, Base: cfg, Exe: exe, Stdout: stdout, Stderr: stderr})
		fmt.Fprintln(stdout)
		code = worse(code, shapeCode)
		rows = append(rows, demoRows(sh, c, sum)...)
	}
	if ctx.Err() != nil {
		code = worse(code, exitRun) // interrupted: shapes left out
	}
	printDemo(stdout, c, rows, code)
	fmt.Fprintf(stdout, "the demo took %v; %s\n", time.Since(start).Round(time.Second), machine(loadStart, load1()))
	return code
}

// worse is the exit status of two parts' a and b: a violation before a
// run that could not be carried out, either before success.
func worse(a, b int) int {
	if a == exitViolation || b == exitViolation {
		return exitViolation
	}
	return max(a, b)
}

// command says how the shape runs here, and the stress command that runs
// it alone with README's windows (the matrix's: 20s after 5s warm-ups),
// three repeats, in stress/.
func (sh demoShape) command(c demoConfig) string {
	d, w := sh.windows(c)
	return fmt.Sprintf("windows of %v after %v, %d repeat(s); alone with README's windows (20s after 5s): go run . %s "+
		"-matrix-repeat 3 -probe 0", d, w, c.Repeat, strings.Join(sh.Args(c), " "))
}
