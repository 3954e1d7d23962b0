package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/tierlock/tierlock/zklock"
)

// errHelp reports that -h was asked for and answered.
var errHelp = errors.New("help")

// cli holds what every subcommand shares: its flags, its output and, once
// connected, its session.
type cli struct {
	name   string
	sc     subcommand
	stdout io.Writer
	stderr io.Writer
	fs     *flag.FlagSet

	servers string
	digest  string
	tls     tlsFlags // tls.go
	timeout time.Duration
	json    bool
	verbose bool
	yes     bool // break only
	count   int  // watch only
	long    bool // ls only

	s  *zklock.Session
	zk zkState // watch only: its lines of the connection's state (zkstate.go)
}

func newCLI(name string, sc subcommand, stdout, stderr io.Writer) *cli {
	c := &cli{name: name, sc: sc, stdout: stdout, stderr: stderr}
	fs := flag.NewFlagSet("tierlock "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.servers, "zk", envOr("TIERLOCK_ZK_SERVERS", "127.0.0.1:2181"), "ZooKeeper servers, host:port,... with an optional chroot after the last, host:port,host:port/myapp ($TIERLOCK_ZK_SERVERS)")
	fs.StringVar(&c.digest, "digest", os.Getenv("TIERLOCK_DIGEST"), "digest credentials user:password for ACL-protected paths ($TIERLOCK_DIGEST; the flag shows in ps, the variable does not)")
	c.tls.register(fs)
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "bound on connecting and on each request (watch: on connecting only)")
	fs.BoolVar(&c.json, "json", false, "JSON output for scripts")
	fs.BoolVar(&c.verbose, "v", false, "log session events to stderr")
	switch name {
	case "break":
		fs.BoolVar(&c.yes, "yes", false, "confirm: delete the node (required)")
	case "watch":
		fs.IntVar(&c.count, "count", 0, "stop after this many listings (a root: this many lines, the first listing counting as one; 0: until interrupted)")
	case "ls":
		fs.BoolVar(&c.long, "l", false, "long: every node of every lock under ROOT, as for a single lock, instead of one line per lock")
	}
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: tierlock %s [flags] %s\n  %s\n\nflags:\n", name, sc.usage, sc.help)
		fs.PrintDefaults()
	}
	c.fs = fs
	return c
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// parse parses the subcommand's flags, which may come before or after its
// argument (tierlock break /locks/a -yes).
func (c *cli) parse(args []string) ([]string, error) {
	var rest []string
	for {
		if err := c.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelp
			}
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		args = c.fs.Args()
		if len(args) == 0 {
			break
		}
		rest = append(rest, args[0])
		args = args[1:]
	}
	if c.timeout <= 0 {
		return nil, fmt.Errorf("%w: -timeout must be positive", errUsage)
	}
	if c.count < 0 {
		return nil, fmt.Errorf("%w: -count must not be negative", errUsage)
	}
	return rest, nil
}

// oneArg returns the subcommand's single argument.
func (c *cli) oneArg(args []string) (string, error) {
	switch len(args) {
	case 1:
		return args[0], nil
	case 0:
		return "", fmt.Errorf("%w: missing %s", errUsage, c.sc.usage)
	}
	return "", fmt.Errorf("%w: one argument expected, got %q", errUsage, args)
}

// sessionTimeout is the inspector's session timeout: zklock's default; a
// test shortens it to see the session expire.
var sessionTimeout = 10 * time.Second

// connect opens the session, within -timeout, with the -digest
// credentials in place (zklock.Connect returns only then), over TLS when
// the -tls flags ask for it.
func (c *cli) connect(ctx context.Context) (*zklock.Session, error) {
	var servers []string
	for _, s := range strings.Split(c.servers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			servers = append(servers, s)
		}
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("%w: -zk names no server", errUsage)
	}
	level := slog.LevelWarn + 1 // silent: errors are reported as values
	if c.verbose {
		level = slog.LevelDebug
	}
	opts := []zklock.SessionOption{zklock.WithLogger(slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: level}))),
		zklock.WithSessionTimeout(sessionTimeout)}
	if c.name == "watch" {
		opts = append(opts, zklock.WithStateListener(c.listen))
	}
	if c.digest != "" {
		user, password, ok := strings.Cut(c.digest, ":")
		if !ok || user == "" {
			return nil, fmt.Errorf("%w: -digest wants user:password", errUsage)
		}
		opts = append(opts, zklock.WithDigestAuth(user, password))
	}
	tlsCfg, err := c.tls.config()
	if err != nil {
		return nil, err
	}
	if tlsCfg != nil {
		opts = append(opts, zklock.WithTLS(tlsCfg))
	}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	s, err := zklock.Connect(cctx, servers, opts...)
	switch {
	case err == nil:
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return nil, fmt.Errorf("%w %s within %v: %w", errUnreachable, c.servers, c.timeout, err)
	case tlsRefused(err):
		return nil, fmt.Errorf("%w %s: %w", errUnreachable, c.servers, err)
	default:
		return nil, err
	}
	c.s = s
	return s, nil
}

func (c *cli) close() {
	if c.s != nil {
		c.s.Close()
	}
}

// requestContext bounds one request by -timeout.
func (c *cli) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout)
}
