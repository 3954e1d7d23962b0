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
)

// idleConfig is a run of stress -idle-cost (idle.go): what idle sessions
// cost one server and their own process, each implementation beside
// go-zookeeper's plain connections (zk.Lock's users).
type idleConfig struct {
	Impls          []proto.Impl // gozk first: the baseline of the ratios
	Sessions       int
	For            time.Duration // the measured window of each implementation
	Settle         time.Duration // between the last session opened and the window
	Stagger        time.Duration // between consecutive sessions' opening
	Baseline       bool          // measure the empty server first, and subtract it
	SessionTimeout time.Duration
	ConnectTimeout time.Duration
	ZK             []string // empty: $TIERLOCK_ZK_SERVERS, else a server started here
	Tick           time.Duration
}

const idleUsageHead = `Usage: stress -idle-cost [flags]

stress -idle-cost measures what idle sessions cost one ZooKeeper server:
-idle-sessions sessions that lock nothing, of each implementation in
turn, on the same server, all closed between:

  gozk      go-zookeeper's zk.Connect, as zk.Lock's users hold it: the
            client pings every third of the session timeout
  zkcompat  the same connection with tierlock's drop-in started on it
            (zkcompat.NewLock, never locked): its session, kept while the
            connection lives, syncs every idle period besides the pings
  tier      zklock.Connect, tierlock's own session (tier's quick start):
            pings and idle syncs, as zkcompat

For each, the sessions open -idle-stagger apart, settle for -idle-settle,
then for -idle-for it counts, per session per minute: the requests the
clients wrote (pings, syncs, other; counted on the wire by opcode), the
packets the server received (mntr zk_packets_received), the server's CPU
time (utime+stime of the ZooKeeper process, /proc/<pid>/stat; n/a for a
server not started here) and this process's (getrusage), less an empty
server's over as long (-idle-baseline), with the ratios to gozk's.

Without -zk (or TIERLOCK_ZK_SERVERS) it starts a local standalone
ZooKeeper with tickTime -idle-tick and maxClientCnxns=0. An existing
server must accept -idle-sessions connections from one address
(maxClientCnxns=0 or more; 60 by default) and answer mntr (4lw whitelist).

The real measurement (about 5 minutes with the defaults):

  go run -C stress . -idle-cost -idle-sessions 1000 -idle-for 60s

Exit status: 0 every session stayed up through its window, 1 a session
failed to open or was lost, 2 bad usage, 3 the run could not be carried
out or was interrupted.

Flags:
`

// defineModeFlags adds to stress's own flags the modes with flags of
// their own, which run dispatches before reading them: -cold
// (cold_flags.go), -idle-cost and -demo (demo.go).
func defineModeFlags(fs *flag.FlagSet) {
	fs.Bool("demo", false, "run the shapes README gives speed figures for, with repeats, beside README's figures: stress -demo -h")
	fs.Bool("cold", false, "measure cold locks instead, beside zk.Lock: stress -cold -h")
	fs.Bool("idle-cost", false, "measure what idle sessions cost the server instead, beside zk.Lock's: stress -idle-cost -h")
}

// parseIdleFlags reads the command line of stress -idle-cost.
func parseIdleFlags(args []string, stderr io.Writer) (idleConfig, error) {
	c := idleConfig{}
	fs := flag.NewFlagSet("stress -idle-cost", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, idleUsageHead)
		fs.PrintDefaults()
	}
	fs.Bool("idle-cost", true, "measure idle sessions' cost (this mode)")
	impl := fs.String("impl", "all", "implementations beside gozk, which always runs: zkcompat, tier, all, or a comma-separated list")
	fs.IntVar(&c.Sessions, "idle-sessions", 1000, "idle sessions of each implementation, open at once")
	fs.DurationVar(&c.For, "idle-for", time.Minute, "the measured window of each implementation")
	fs.DurationVar(&c.Settle, "idle-settle", 0, "wait between the last session opened and the window (0: -session-timeout, a few idle periods)")
	fs.DurationVar(&c.Stagger, "idle-stagger", 5*time.Millisecond, "time between the opening of consecutive sessions")
	fs.BoolVar(&c.Baseline, "idle-baseline", true, "first measure the server with no session (after -idle-settle, for -idle-for), and subtract what it did")
	fs.DurationVar(&c.SessionTimeout, "session-timeout", 10*time.Second, "ZooKeeper session timeout the sessions ask for")
	fs.DurationVar(&c.ConnectTimeout, "connect-timeout", 10*time.Second, "how long a session may take to open")
	zkFlag := fs.String("zk", "", "host:port of one existing ZooKeeper server (default: $TIERLOCK_ZK_SERVERS, else start one)")
	fs.DurationVar(&c.Tick, "idle-tick", 200*time.Millisecond, "tickTime of the server started here (ZooKeeper's sample config: 2s)")
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
	if c.Impls, err = idleImpls(*impl); err != nil {
		return c, err
	}
	if c.ZK, err = zkList(*zkFlag); err != nil {
		return c, err
	}
	if c.Settle == 0 {
		c.Settle = c.SessionTimeout
	}
	return c, checkIdle(c)
}

// checkIdle refuses values out of range.
func checkIdle(c idleConfig) error {
	for _, k := range []struct {
		bad  bool
		what string
		got  any
	}{
		{c.Sessions <= 0, "-idle-sessions must be at least 1", c.Sessions},
		{c.For < time.Second, "-idle-for must be at least 1s", c.For},
		{c.Settle < 0, "-idle-settle must not be negative", c.Settle},
		{c.Stagger < 0, "-idle-stagger must not be negative", c.Stagger},
		{c.SessionTimeout <= 0, "-session-timeout must be positive", c.SessionTimeout},
		{c.ConnectTimeout <= 0, "-connect-timeout must be positive", c.ConnectTimeout},
		{c.Tick <= 0, "-idle-tick must be positive", c.Tick},
		{len(c.ZK) > 1, "-zk: one server, not an ensemble", strings.Join(c.ZK, ",")},
	} {
		if k.bad {
			return usageErr("%s, got %v", k.what, k.got)
		}
	}
	return nil
}

// idleImpls reads -impl for -idle-cost: gozk, the baseline, comes first,
// then zkcompat and tier.
func idleImpls(v string) ([]proto.Impl, error) {
	out := []proto.Impl{proto.Gozk}
	for _, name := range strings.Split(v, ",") {
		switch im := proto.Impl(strings.TrimSpace(name)); im {
		case "all":
			out = append(out, proto.Zkcompat, proto.Tier)
		case proto.Gozk, proto.Zkcompat, proto.Tier:
			out = append(out, im)
		default:
			return nil, usageErr("-impl: %q is not measured by -idle-cost (want zkcompat, tier, gozk or all)", name)
		}
	}
	slices.SortStableFunc(out, func(a, b proto.Impl) int { return coldOrder(a) - coldOrder(b) })
	return slices.Compact(out), nil
}
