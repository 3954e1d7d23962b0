package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/stress/internal/fault"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/runner"
	"github.com/tierlock/tierlock/zklock"
)

// errUsage marks errors that are the caller's: exit code 2.
var errUsage = errors.New("usage")

func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errUsage}, args...)...)
}

const usageHead = `Usage: stress [flags]

stress runs P worker processes x G goroutines against L ZooKeeper lock
paths, proves that mutual exclusion held (an independent checker reads
every critical section's enter and exit times and fencing token), and
compares lock implementations side by side:

  tier          tier.Lock (what you use), one per path per process, shared
  tier-handoff  the same with bounded local hand-off (-handoff)
  zklock        zklock.Lock (tier 2 alone, a building block), behind a mutex
  gozk          go-zookeeper's zk.Lock, one per goroutine and path (baseline)
  redsync       go-redsync/redsync v4's Mutex, one per goroutine and path, on
                a redis-server stress starts; never in "all"
  nolock        no lock at all, never in "all": a self-test that the checker
                catches violations (the run must fail)

With -recipe rw the workers take a read/write lock instead (a fraction
-readers of the holds are reads) and with -recipe semaphore a semaphore of
-leases leases (-permits at a time); the implementations are then

  tier          tier.RWLock / tier.Semaphore, one per path per process
  curator       Curator's InterProcessReadWriteLock / InterProcessSemaphoreV2
                (Java), one lock per thread and path / one semaphore per path
  nolock        no lock at all, never in "all": the run must fail

and the checker lets reads overlap reads (never a write), or up to -leases
permits be in use at once. With -recipe multi each hold is a tier.MultiLock
of -members mutexes (the picked path and the next ones), recorded and
checked on every path it covers; -impl tier or nolock.

Without -zk (or TIERLOCK_ZK_SERVERS) it starts a local ZooKeeper; with
redsync, a local redis-server too (Debian's redis-server, on PATH).

Every implementation is measured over the same window: -duration after a
-warmup. Only holds entered inside it count; the servers' and the workers'
counters (requests by kind, CPU) are read at its edges; what a run does
after it (a drain, abandoned waits) is reported apart. After each run the
servers' limits are probed (-probe): the hand-off chain and create+delete
pairs.

With -fault it injects faults at random intervals while the workers run
(restart: SIGKILL and restart the server; leader: SIGKILL the leader of a
three-server ensemble; expire: freeze one worker's connection past its
session timeout; drop: cut one worker's connection; kill: SIGKILL one
worker, preferably while it holds a lock, and start a replacement;
partition: cut a follower of a three-server ensemble from its peers while
its clients stay connected; reset: TCP resets of one worker's connections;
flood: expire a worker's session while it waits for 200 locks; stall: block
one worker's writes while the server's bytes flow; pause: SIGSTOP a worker
holding a lock past its session timeout, then SIGCONT it) and checks that
every fault is recovered from and mutual exclusion still held. With
-writes (the default) every exclusive hold also writes through its lock's
guarded transaction to a node of its path and to a fenced store in the
parent, and the checker shows that no stale holder's write (the paused
one's on waking) landed after a later holder's.
restart, leader and partition need a ZooKeeper that stress starts itself.

Exit status: 0 all checks passed, 1 a mutual-exclusion violation or lock
error, 2 bad usage, 3 the run could not be carried out.

Flags:
`

// parseFlags reads the command line into a run's configuration.
func parseFlags(args []string, stderr io.Writer) (runner.Config, error) {
	var c runner.Config
	fs := flag.NewFlagSet("stress", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageHead)
		fs.PrintDefaults()
	}
	impl := fs.String("impl", "all", "implementations: tier, zklock, gozk, all, or a comma-separated list (tier-handoff and redsync too)")
	mix := fs.String("mix", "", "one run of a mixed fleet on the same paths: impl:processes,... from tier, tier-handoff, zklock, gozk, zkcompat, curator, kazoo (sets -procs)")
	recipe := fs.String("recipe", string(proto.Mutex), "what the workers take: mutex, rw (a read/write lock), semaphore or multi (a multi-lock)")
	fs.IntVar(&c.Members, "members", 2, "multi: locks per hold, the picked path and the next ones (2 to -paths)")
	fs.Float64Var(&c.Readers, "readers", 0.9, "rw: the fraction of holds that are reads (0 to 1)")
	fs.IntVar(&c.Leases, "leases", 3, "semaphore: leases (n) per path")
	fs.IntVar(&c.Permits, "permits", 1, "semaphore: permits each hold takes (1 to -leases)")
	fs.IntVar(&c.Procs, "procs", 4, "worker processes (P)")
	fs.IntVar(&c.Goroutines, "goroutines", 64, "goroutines per process (G)")
	fs.IntVar(&c.Paths, "paths", 1, "lock paths (L)")
	fs.StringVar(&c.Pick, "pick", "roundrobin", "how a goroutine picks its next path: roundrobin or random")
	fs.DurationVar(&c.Duration, "duration", 10*time.Second, "how long each implementation's run is measured, after -warmup (ignored with -acquisitions)")
	fs.DurationVar(&c.Warmup, "warmup", 5*time.Second, "warm-up before the measured window of each timed run: acquisitions, requests and CPU count inside the window only (with -matrix: the preset's unless given)")
	fs.DurationVar(&c.Probe, "probe", 2*time.Second, "length of each probe of the servers' limits (hand-off chain, create+delete pairs) right after each implementation's run; 0: none (with -matrix: the preset's unless given)")
	fs.Int64Var(&c.Acquisitions, "acquisitions", 0, "run each implementation for this many acquisitions in all, split evenly over goroutines, instead of -duration")
	fs.DurationVar(&c.Hold, "hold", 0, "critical section length")
	fs.StringVar(&c.HoldMode, "hold-mode", "sleep", "how the critical section passes its time: sleep or spin (busy work)")
	fs.BoolVar(&c.Handoff, "handoff", false, "use the tier lock's bounded local hand-off (with -impl all: run tier both ways)")
	fs.IntVar(&c.HandoffMax, "handoff-max", 64, "hand-off: most consecutive local hand-offs before the node is released")
	fs.DurationVar(&c.HandoffMaxHold, "handoff-max-hold", 50*time.Millisecond, "hand-off: longest time a process keeps the node by handing off")
	zkFlag := fs.String("zk", "", "comma-separated host:port list of an existing ZooKeeper ensemble (default: $TIERLOCK_ZK_SERVERS, else start one)")
	fs.StringVar(&c.Root, "root", "/tierlock-stress", "ZooKeeper path under which each run makes its lock paths")
	fs.DurationVar(&c.SessionTimeout, "session-timeout", 10*time.Second, "ZooKeeper session timeout of the workers")
	fs.DurationVar(&c.ConnectTimeout, "connect-timeout", 10*time.Second, "how long to wait for ZooKeeper to answer")
	fs.DurationVar(&c.Timeout, "timeout", 0, "give up on an implementation's run after this long (default: -duration + 1m, or 10m with -acquisitions)")
	fs.DurationVar(&c.Sample, "sample", 200*time.Millisecond, "how often znodes and watches under the lock paths are counted")
	fault := fs.String("fault", "none", "faults to inject: none, restart, leader, expire, drop, kill, partition, reset, flood, stall, pause, close, all, or a comma-separated list")
	fs.BoolVar(&c.Writes, "writes", true, "with -fault: every exclusive hold (a mutex's, a writer's) writes through its lock's guarded transaction (tier, tier-handoff, zklock) and to a fenced store, and the checker checks both histories for stale writes")
	fs.DurationVar(&c.FaultEvery, "fault-every", 5*time.Second, "mean time between faults (randomized, counted from the previous fault's recovery)")
	fs.Int64Var(&c.FaultSeed, "fault-seed", 0, "seed of the fault schedule (0: random; the seed used is printed)")
	fs.StringVar(&c.JSON, "json", "", "write the figures as JSON to this file")
	fs.StringVar(&c.Report, "report", "", "write an HTML report with charts to this file")
	fs.StringVar(&c.Metrics, "metrics", "", "host:port: each tier or zklock worker serves Prometheus metrics of its locks and session while it runs, the worker in slot i at http://host:(port+i)/metrics")
	fs.BoolVar(&c.Quiet, "quiet", false, "no progress bar")
	fs.BoolVar(&c.Verbose, "v", false, "pass the workers' logs through to stderr")
	defineModeFlags(fs) // -cold, -idle-cost
	matrixFlag := defineMatrixFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, err
		}
		return c, usageErr("%v", err)
	}
	if fs.NArg() > 0 {
		return c, usageErr("unexpected arguments: %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	acqSet := set["acquisitions"]

	if err := recipeFlags(&c, *recipe, set); err != nil {
		return c, err
	}
	var err error
	if c.Impls, err = recipeImpls(c.Recipe, *impl, c.Handoff); err != nil {
		return c, err
	}
	if err := checkShape(&c, acqSet); err != nil {
		return c, err
	}
	if err := zklock.ValidatePath(c.Root); err != nil {
		return c, usageErr("-root: %v", err)
	}
	if c.ZK, err = zkList(*zkFlag); err != nil {
		return c, err
	}
	// In this order: each reads what the ones before settled.
	for _, apply := range []func() error{
		func() error { return metricsFlag(c.Metrics, c.Procs) },
		func() error { return faultFlags(&c, *fault, set) },
		func() error { return parseMix(&c, *mix, set) },
		func() error { return windowFlags(&c, set) },
		func() error { return matrixFlag.apply(&c, set) },
	} {
		if err := apply(); err != nil {
			return c, err
		}
	}
	if c.Timeout == 0 {
		c.Timeout = defaultTimeout(c)
	}
	for _, out := range []struct{ flag, path string }{{"-json", c.JSON}, {"-report", c.Report}} {
		if err := checkWritable(out.path); err != nil {
			return c, usageErr("%s: %v", out.flag, err)
		}
	}
	return c, nil
}

// recipeImpls reads -impl for the recipe.
func recipeImpls(r proto.Recipe, impl string, handoff bool) ([]proto.Impl, error) {
	switch r {
	case proto.Mutex:
		return expandImpls(impl, handoff)
	case proto.Multi:
		return expandMultiImpls(impl)
	}
	return expandRecipeImpls(impl)
}

// checkShape refuses a run shape out of range (exit 2); a run of
// -acquisitions has no duration.
func checkShape(c *runner.Config, acqSet bool) error {
	for _, k := range []struct {
		bad  bool
		what string
		got  any
	}{
		{c.Procs <= 0, "-procs must be at least 1", c.Procs},
		{c.Goroutines <= 0, "-goroutines must be at least 1", c.Goroutines},
		{c.Paths <= 0, "-paths must be at least 1", c.Paths},
		{acqSet && c.Acquisitions <= 0, "-acquisitions must be at least 1", c.Acquisitions},
		{!acqSet && c.Duration <= 0, "-duration must be positive", c.Duration},
		{c.Hold < 0, "-hold must not be negative", c.Hold},
		{c.HoldMode != "sleep" && c.HoldMode != "spin", "-hold-mode must be sleep or spin", fmt.Sprintf("%q", c.HoldMode)},
		{c.Pick != "roundrobin" && c.Pick != "random", "-pick must be roundrobin or random", fmt.Sprintf("%q", c.Pick)},
		{c.HandoffMax <= 0, "-handoff-max must be at least 1", c.HandoffMax},
		{c.HandoffMaxHold <= 0, "-handoff-max-hold must be positive", c.HandoffMaxHold},
		{c.SessionTimeout <= 0, "-session-timeout must be positive", c.SessionTimeout},
		{c.ConnectTimeout <= 0, "-connect-timeout must be positive", c.ConnectTimeout},
		{c.Timeout < 0, "-timeout must not be negative", c.Timeout},
		{c.Sample <= 0, "-sample must be positive", c.Sample},
	} {
		if k.bad {
			return usageErr("%s, got %v", k.what, k.got)
		}
	}
	if acqSet {
		c.Duration = 0
		if c.Acquisitions < int64(c.Procs*c.Goroutines) {
			return usageErr("-acquisitions %d is fewer than procs x goroutines = %d: every goroutine needs at least one",
				c.Acquisitions, c.Procs*c.Goroutines)
		}
	}
	return nil
}

// zkList reads -zk: host:port,... (empty: none given).
func zkList(v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	var zk []string
	for _, a := range strings.Split(v, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if !strings.Contains(a, ":") {
			return nil, usageErr("-zk: %q is not host:port", a)
		}
		zk = append(zk, a)
	}
	if len(zk) == 0 {
		return nil, usageErr("-zk: no address in %q", v)
	}
	return zk, nil
}

// defaultTimeout is -timeout's default: the run and a minute; with faults,
// long enough for a fault still being recovered from at the end; 10
// minutes for a run of -acquisitions.
func defaultTimeout(c runner.Config) time.Duration {
	switch {
	case c.Acquisitions > 0:
		return 10 * time.Minute
	case c.Faults != nil:
		return c.Duration + 2*time.Minute + c.SessionTimeout
	}
	return c.Warmup + c.Duration + time.Minute
}

// faultFlags checks -fault and what it implies: a short session timeout
// unless one is given (2s: the local server's tickTime of 200ms allows 0.4s
// to 4s), timed runs, and only the implementations that notice a lost hold:
// tier by default. go-zookeeper's zk.Lock cannot go on after its session
// expired (its Unlock fails and every later Lock returns ErrDeadlock).
func faultFlags(c *runner.Config, v string, set map[string]bool) error {
	external := len(c.ZK) > 0
	if _, fromEnv := zkserver.FromEnv(); fromEnv {
		external = true
	}
	kinds, err := fault.Parse(v, external)
	if err != nil {
		return usageErr("%v", err)
	}
	if kinds == nil {
		return nil
	}
	c.Faults = kinds
	switch {
	case c.FaultEvery <= 0:
		return usageErr("-fault-every must be positive, got %v", c.FaultEvery)
	case set["acquisitions"]:
		return usageErr("-fault needs a timed run (-duration), not -acquisitions")
	}
	if !set["session-timeout"] {
		c.SessionTimeout = 2 * time.Second
	}
	if !set["impl"] {
		c.Impls = []proto.Impl{proto.Tier}
		if c.Handoff {
			c.Impls = []proto.Impl{proto.TierHandoff}
		}
	}
	for _, im := range c.Impls {
		if im == proto.Gozk || im == proto.Nolock || im == proto.Curator || im == proto.Redsync {
			return usageErr("-fault: %s cannot be run with faults (it does not notice a lost hold); use tier, tier-handoff or zklock", im)
		}
	}
	if c.FaultSeed == 0 {
		c.FaultSeed = time.Now().UnixNano() % 1_000_000_000
	}
	return nil
}

// expandImpls turns the -impl value into the list of runs, in the order
// they run: the baseline last, so that ratios read left to right.
func expandImpls(v string, handoff bool) ([]proto.Impl, error) {
	var out []proto.Impl
	add := func(names ...proto.Impl) {
		for _, n := range names {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	for _, name := range strings.Split(v, ",") {
		switch proto.Impl(strings.TrimSpace(name)) {
		case "all":
			if handoff {
				add(proto.Tier, proto.TierHandoff, proto.Zklock, proto.Gozk)
			} else {
				add(proto.Tier, proto.Zklock, proto.Gozk)
			}
		case proto.Tier:
			if handoff {
				add(proto.TierHandoff)
			} else {
				add(proto.Tier)
			}
		case proto.TierHandoff, proto.Zklock, proto.Gozk, proto.Redsync, proto.Nolock:
			add(proto.Impl(strings.TrimSpace(name)))
		default:
			return nil, usageErr("-impl: unknown implementation %q (want tier, tier-handoff, zklock, gozk, redsync, nolock or all)", name)
		}
	}
	return out, nil
}

// parseMix reads -mix ("tier:2,curator:1,kazoo:1,gozk:1": implementation
// and worker processes) into c: the run is one mixed run of that many
// processes. -procs, if given, must agree with the total; -impl and -fault
// do not go with it (peers do not notice a lost hold).
func parseMix(c *runner.Config, v string, set map[string]bool) error {
	if v == "" {
		return nil
	}
	total := 0
	for _, part := range strings.Split(v, ",") {
		name, n, found := strings.Cut(strings.TrimSpace(part), ":")
		procs := 1
		if found {
			var err error
			if procs, err = strconv.Atoi(n); err != nil || procs < 1 {
				return usageErr("-mix: %q: the count must be a positive number", part)
			}
		}
		if !slices.Contains(proto.MixImpls, proto.Impl(name)) {
			return usageErr("-mix: unknown implementation %q (want %s)", name, mixNames())
		}
		if i := slices.IndexFunc(c.Mix, func(m runner.MixMember) bool { return m.Impl == proto.Impl(name) }); i >= 0 {
			c.Mix[i].Procs += procs
		} else {
			c.Mix = append(c.Mix, runner.MixMember{Impl: proto.Impl(name), Procs: procs})
		}
		total += procs
	}
	switch {
	case set["procs"] && c.Procs != total:
		return usageErr("-mix makes %d worker processes but -procs says %d (leave -procs out with -mix)", total, c.Procs)
	case set["impl"]:
		return usageErr("-mix and -impl do not go together: a mixed run is one run of its members")
	case c.Faults != nil:
		return usageErr("-mix cannot be run with -fault: the peers do not notice a lost hold")
	}
	c.Procs = total
	c.Impls = []proto.Impl{proto.Mix}
	return nil
}

// mixNames lists the implementations -mix takes.
func mixNames() string {
	s := make([]string, len(proto.MixImpls))
	for i, im := range proto.MixImpls {
		s[i] = string(im)
	}
	return strings.Join(s, ", ")
}
