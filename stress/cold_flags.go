package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/zklock"
)

// coldConfig is a run of stress -cold (cold.go): the latency of an
// uncontended lock first on a connection and after idle spells, each
// implementation beside go-zookeeper's zk.Lock.
type coldConfig struct {
	Impls          []proto.Impl    // gozk first: the baseline of the ratios
	Idle           []time.Duration // the idle spells, shortest first
	N              int             // connections per implementation and spell
	SessionTimeout time.Duration
	ConnectTimeout time.Duration
	ZK             []string // empty: $TIERLOCK_ZK_SERVERS, else a server started here
	Tick           time.Duration
	Root           string
	Stagger        time.Duration
	Budget         time.Duration
}

const coldUsageHead = `Usage: stress -cold [flags]

stress -cold measures an uncontended lock when the connection is cold:
the first lock on a new connection, and a lock after the connection was
idle for each -cold-idle spell, for go-zookeeper's zk.Lock (gozk, one
zk.Conn per connection), tierlock's drop-in (zkcompat, on the caller's own
zk.Conn) and tier (zklock.Connect and tier.New), all on one server, side
by side in one run.

For each implementation and idle spell, -cold-n connections each connect,
take and release a lock once (the "first" row: every connection's first),
stay idle for the spell, then take and release a lock on a path of their
own again; that Lock is timed (from the handle's making to Lock's return).
Every lock path is made beforehand, persistent and empty, by another
connection: each Lock takes a free lock on an existing path, as a
scheduler's does after its first run. The connections start -cold-stagger
apart (longest spell first, implementations interleaved), so the run lasts
about the longest spell plus the stagger, not the sum of the spells.

The table gives each cell's median and p99 (nearest rank: with 20 locks,
p99 is the slowest), the ratios of the median and p99 to
zk.Lock's, and how many Locks returned within -cold-budget (a
LockContext with that deadline would have taken the lock).

Without -zk (or TIERLOCK_ZK_SERVERS) it starts a local standalone
ZooKeeper with tickTime -cold-tick. An existing server must accept
implementations x spells x -cold-n connections from one address at once
(maxClientCnxns=0 or that many).

Exit status: 0 every Lock was measured, 1 a Lock or a connection failed,
2 bad usage, 3 the run could not be carried out or was interrupted.

Flags:
`

// isMode reports whether args ask for the mode of flag mode (cold,
// idle-cost, demo): the flag given and not set false, before any "--".
func isMode(args []string, mode string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		name, val, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && name == mode && val != "false" {
			return true
		}
	}
	return false
}

// isCold reports whether args ask for stress -cold.
func isCold(args []string) bool { return isMode(args, "cold") }

// isIdleCost reports whether args ask for stress -idle-cost.
func isIdleCost(args []string) bool { return isMode(args, "idle-cost") }

// isDemo reports whether args ask for stress -demo.
func isDemo(args []string) bool { return isMode(args, "demo") }

// parseColdFlags reads the command line of stress -cold.
func parseColdFlags(args []string, stderr io.Writer) (coldConfig, error) {
	c := coldConfig{}
	fs := flag.NewFlagSet("stress -cold", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, coldUsageHead)
		fs.PrintDefaults()
	}
	fs.Bool("cold", true, "measure cold locks (this mode)")
	impl := fs.String("impl", "all", "implementations beside gozk, which always runs: zkcompat, tier, all, or a comma-separated list")
	idle := fs.String("cold-idle", "5s,15s,35s,60s,5m", "idle spells, a comma-separated list of durations")
	fs.IntVar(&c.N, "cold-n", 20, "connections (so Locks measured) per implementation and idle spell")
	fs.DurationVar(&c.SessionTimeout, "session-timeout", 10*time.Second, "ZooKeeper session timeout the connections ask for")
	fs.DurationVar(&c.ConnectTimeout, "connect-timeout", 10*time.Second, "how long a connection may take to get a session")
	zkFlag := fs.String("zk", "", "comma-separated host:port list of an existing ZooKeeper (default: $TIERLOCK_ZK_SERVERS, else start one)")
	fs.DurationVar(&c.Tick, "cold-tick", 200*time.Millisecond, "tickTime of the server started here (ZooKeeper's sample config: 2s)")
	fs.StringVar(&c.Root, "root", "/tierlock-stress", "ZooKeeper path under which the run makes its lock paths")
	fs.DurationVar(&c.Stagger, "cold-stagger", 10*time.Millisecond, "time between the starts of consecutive connections")
	fs.DurationVar(&c.Budget, "cold-budget", 100*time.Millisecond, "the deadline a Lock is counted against")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, err
		}
		return c, usageErr("%v", err)
	}
	if fs.NArg() > 0 {
		return c, usageErr("unexpected arguments: %q", fs.Args())
	}
	var err error
	if c.Impls, err = coldImpls(*impl); err != nil {
		return c, err
	}
	if c.Idle, err = durationList(*idle); err != nil {
		return c, err
	}
	if c.ZK, err = zkList(*zkFlag); err != nil {
		return c, err
	}
	return c, checkCold(c)
}

// checkCold refuses values out of range.
func checkCold(c coldConfig) error {
	for _, k := range []struct {
		bad  bool
		what string
		got  any
	}{
		{c.N <= 0, "-cold-n must be at least 1", c.N},
		{c.SessionTimeout <= 0, "-session-timeout must be positive", c.SessionTimeout},
		{c.ConnectTimeout <= 0, "-connect-timeout must be positive", c.ConnectTimeout},
		{c.Tick <= 0, "-cold-tick must be positive", c.Tick},
		{c.Stagger < 0, "-cold-stagger must not be negative", c.Stagger},
		{c.Budget <= 0, "-cold-budget must be positive", c.Budget},
	} {
		if k.bad {
			return usageErr("%s, got %v", k.what, k.got)
		}
	}
	if err := zklock.ValidatePath(c.Root); err != nil {
		return usageErr("-root: %v", err)
	}
	return nil
}

// coldImpls reads -impl for -cold: gozk, the baseline, comes first.
func coldImpls(v string) ([]proto.Impl, error) {
	out := []proto.Impl{proto.Gozk}
	for _, name := range strings.Split(v, ",") {
		switch im := proto.Impl(strings.TrimSpace(name)); im {
		case "all":
			out = append(out, proto.Zkcompat, proto.Tier)
		case proto.Gozk, proto.Zkcompat, proto.Tier:
			out = append(out, im)
		default:
			return nil, usageErr("-impl: %q is not measured by -cold (want zkcompat, tier, gozk or all)", name)
		}
	}
	slices.SortStableFunc(out, func(a, b proto.Impl) int { return coldOrder(a) - coldOrder(b) })
	return slices.Compact(out), nil
}

// coldOrder is an implementation's column: gozk, zkcompat, tier.
func coldOrder(im proto.Impl) int {
	return slices.Index([]proto.Impl{proto.Gozk, proto.Zkcompat, proto.Tier}, im)
}

// durationList reads -cold-idle: positive durations, sorted, no repeats.
func durationList(v string) ([]time.Duration, error) {
	var out []time.Duration
	for _, s := range strings.Split(v, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d <= 0 {
			return nil, usageErr("-cold-idle: %q is not a positive duration", s)
		}
		out = append(out, d)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
