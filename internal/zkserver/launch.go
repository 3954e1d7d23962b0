package zkserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultMaxSessionTimeout is the longest session timeout the servers
// started here grant unless WithSessionTimeouts says otherwise: a client
// that asks for 10s (the stress command's default) gets 10s, not
// ZooKeeper's default cap of 20 ticks.
const DefaultMaxSessionTimeout = 60 * time.Second

// Default locations of Debian's ZooKeeper package.
const (
	DefaultJar     = "/usr/share/java/zookeeper.jar"
	DefaultConfDir = "/etc/zookeeper/conf"
	slf4jSimpleJar = "/usr/share/java/slf4j-simple.jar"
)

var (
	// ErrNotInstalled is returned when java or the ZooKeeper jar is missing.
	ErrNotInstalled = errors.New("zkserver: ZooKeeper is not installed (run scripts/install-deps.sh)")
	// ErrExternal is returned by operations that need control of the server
	// processes when the cluster points at servers given by TIERLOCK_ZK_SERVERS.
	ErrExternal = errors.New("zkserver: servers are external and cannot be controlled")
	// ErrBadMember is returned for a member index out of range.
	ErrBadMember = errors.New("zkserver: no such member")
	// ErrNotRunning is returned for an operation on a member that is stopped.
	ErrNotRunning = errors.New("zkserver: member is not running")
	// ErrNoLeader is returned by Leader when no member reports leading.
	ErrNoLeader = errors.New("zkserver: no leader")
)

type config struct {
	tickTime    time.Duration
	syncLimit   int
	initLimit   int
	peerProxies bool
	minSession  time.Duration
	maxSession  time.Duration
	memberMax   map[int]time.Duration // WithMemberMaxSessionTimeout, by member index
	dir         string
	jar         string
	logger      *slog.Logger
	startupWait time.Duration
	containers  time.Duration
	clockOffset time.Duration // faketime.go
	tls         *TLS          // tls.go
}

// Option configures Start and StartEnsemble.
type Option func(*config)

// WithTickTime sets ZooKeeper's tickTime (default 200ms). A small tick
// makes session-expiry tests fast. ZooKeeper's own bounds on the session
// timeout are 2 and 20 ticks (0.4s to 4s at 200ms), which would cut a 10s
// session asked for to 4s; the servers started here allow 2 ticks to
// [DefaultMaxSessionTimeout] instead (see WithSessionTimeouts).
func WithTickTime(d time.Duration) Option { return func(c *config) { c.tickTime = d } }

// WithSyncLimit sets ZooKeeper's syncLimit (default 10): how many ticks a
// follower may go without hearing from the leader (and the leader without
// an answer from a follower) before it gives up on it. A follower cut from
// the leader keeps serving its clients, pings included, for that long.
func WithSyncLimit(ticks int) Option { return func(c *config) { c.syncLimit = ticks } }

// WithInitLimit sets ZooKeeper's initLimit (default 20): how many ticks a
// follower may take to connect to the leader and sync with it.
func WithInitLimit(ticks int) Option { return func(c *config) { c.initLimit = ticks } }

// WithDir puts the servers' data and logs under dir instead of a new
// temporary directory (which Close removes).
func WithDir(dir string) Option { return func(c *config) { c.dir = dir } }

// WithLogger sets where progress is logged (default: discarded).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithStartupTimeout bounds how long Start waits for every member to serve.
func WithStartupTimeout(d time.Duration) Option { return func(c *config) { c.startupWait = d } }

// WithContainerCheck sets how often (at least every 1ms) the container
// manager deletes empty containers that had a child (default a minute,
// ZooKeeper's), a Java system property that zoo.cfg cannot set.
func WithContainerCheck(d time.Duration) Option { return func(c *config) { c.containers = d } }

// Cluster is a running standalone server or ensemble, or external servers.
type Cluster struct {
	cfg      config
	members  []*member
	external []string
	ownDir   bool
	links    []*PeerLink // WithPeerProxies: every member's proxies to its peers
}

type member struct {
	id         int
	clientPort int
	securePort int // WithTLS
	peerPort   int
	electPort  int
	dir        string
	cfgFile    string
	logFile    string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Start starts one standalone server and waits until it serves.
func Start(ctx context.Context, opts ...Option) (*Cluster, error) {
	return StartEnsemble(ctx, 1, opts...)
}

// StartEnsemble starts n servers (n == 1: standalone; n >= 3: a quorum
// ensemble) and waits until every member serves.
func StartEnsemble(ctx context.Context, n int, opts ...Option) (*Cluster, error) {
	cfg, err := newConfig(n, opts)
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg}
	if c.cfg.dir == "" {
		d, err := os.MkdirTemp("", "tierlock-zk-")
		if err != nil {
			return nil, fmt.Errorf("zkserver: %w", err)
		}
		c.cfg.dir, c.ownDir = d, true
	}
	if err := c.start(ctx, n); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// newConfig checks a start's size and options, and that Java and the
// server's jar are there.
func newConfig(n int, opts []Option) (config, error) {
	cfg := config{tickTime: 200 * time.Millisecond, syncLimit: 10, initLimit: 20, jar: DefaultJar, startupWait: 60 * time.Second, containers: time.Minute}
	if n < 1 || n == 2 {
		return cfg, fmt.Errorf("zkserver: ensemble size %d: want 1 or at least 3", n)
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.syncLimit < 1 || cfg.initLimit < 1 {
		return cfg, fmt.Errorf("zkserver: syncLimit %d, initLimit %d: both must be at least 1", cfg.syncLimit, cfg.initLimit)
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	if _, err := exec.LookPath("java"); err != nil {
		return cfg, fmt.Errorf("%w: java: %v", ErrNotInstalled, err)
	}
	if _, err := os.Stat(cfg.jar); err != nil {
		return cfg, fmt.Errorf("%w: %v", ErrNotInstalled, err)
	}
	return cfg, nil
}

// start lays out n members and starts them. Ports are picked free, but
// another process can take one before the JVM binds it; a failed start is
// retried with fresh ports, three times in all.
func (c *Cluster) start(ctx context.Context, n int) error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = c.layout(n); err != nil {
			return err
		}
		if testHookLaidOut != nil {
			testHookLaidOut(c)
		}
		if err = c.startAll(ctx); err == nil {
			return nil
		}
		c.stopAll()
		c.closePeerLinks()
		if ctx.Err() != nil {
			return err
		}
		c.cfg.logger.Warn("zookeeper start failed, retrying", "err", err)
	}
	return err
}

func (c *Cluster) layout(n int) error {
	ports, err := freePorts(4 * n)
	if err != nil {
		return err
	}
	c.members = make([]*member, n)
	for i := range c.members {
		p := ports[4*i:]
		c.members[i] = &member{
			id: i + 1, clientPort: p[0], peerPort: p[1], electPort: p[2], securePort: p[3],
			dir: filepath.Join(c.cfg.dir, fmt.Sprintf("zk%d", i+1)),
		}
	}
	if err := c.makePeerLinks(); err != nil {
		return err
	}
	for _, m := range c.members {
		if err := c.writeConfig(m); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) writeConfig(m *member) error {
	data := filepath.Join(m.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return fmt.Errorf("zkserver: %w", err)
	}
	tick := c.cfg.tickTime.Milliseconds()
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\ninitLimit=%d\nsyncLimit=%d\n", tick, c.cfg.initLimit, c.cfg.syncLimit)
	fmt.Fprintf(&b, "dataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n", data, m.clientPort)
	b.WriteString("admin.enableServer=false\n4lw.commands.whitelist=*\nmaxClientCnxns=0\n")
	lo, hi := c.sessionBounds()
	if d, ok := c.cfg.memberMax[m.id-1]; ok {
		hi = max(lo, d)
	}
	fmt.Fprintf(&b, "minSessionTimeout=%d\nmaxSessionTimeout=%d\n", lo.Milliseconds(), hi.Milliseconds())
	if c.cfg.tls != nil {
		if err := c.writeTLS(m, &b); err != nil {
			return err
		}
	}
	if len(c.members) > 1 {
		b.WriteString("standaloneEnabled=false\nreconfigEnabled=false\n")
		for _, o := range c.members {
			fmt.Fprintf(&b, "server.%d=%s\n", o.id, c.peerAddrs(m, o))
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(m.id)+"\n"), 0o644); err != nil {
			return fmt.Errorf("zkserver: %w", err)
		}
	}
	m.cfgFile = filepath.Join(m.dir, "zoo.cfg")
	m.logFile = filepath.Join(m.dir, "server.log")
	// A fresh layout, a fresh log: startAll reads it for a failed bind.
	if err := os.Remove(m.logFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("zkserver: %w", err)
	}
	if err := os.WriteFile(m.cfgFile, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("zkserver: %w", err)
	}
	return nil
}

func (c *Cluster) startAll(ctx context.Context) error {
	for i := range c.members {
		if err := c.launch(i); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.startupWait)
	defer cancel()
	for i := range c.members {
		if err := c.WaitReady(ctx, i); err != nil {
			return err
		}
	}
	// A member that could not bind its election port still comes to
	// serve (it reaches its peers through their listeners) and exits
	// seconds later, when its listener gives up: loaded make test run 56's
	// nemesis partitioned one member of an ensemble that had lost another
	// so, and no quorum was left to expire A's session. The listener binds
	// as the member starts, before the election its serving waits for, so
	// the failure is in its log by now: such a start is retried too.
	for i := range c.members {
		if b, err := os.ReadFile(c.members[i].logFile); err == nil && bytes.Contains(b, []byte("Address already in use")) {
			return fmt.Errorf("zkserver: member %d could not bind a port: %s", i, c.LogTail(i, 15))
		}
	}
	return nil
}

// testHookLaidOut, when set, runs after each layout of a start, before
// the members are launched (a port taken in between).
var testHookLaidOut func(*Cluster)

func (c *Cluster) launch(i int) error {
	m := c.members[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		return nil
	}
	main := "org.apache.zookeeper.server.ZooKeeperServerMain"
	if len(c.members) > 1 {
		main = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
	}
	cp := DefaultConfDir + ":" + c.cfg.jar
	for _, jar := range append([]string{slf4jSimpleJar}, c.nettyJars()...) {
		if _, err := os.Stat(jar); err == nil {
			cp += ":" + jar
		}
	}
	logf, err := os.OpenFile(m.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("zkserver: %w", err)
	}
	cmd := exec.Command("java",
		"-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dzookeeper.admin.enableServer=false",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		fmt.Sprintf("-Dznode.container.checkIntervalMs=%d", max(c.cfg.containers, time.Millisecond).Milliseconds()),
		"-cp", cp, main, m.cfgFile)
	cmd.Dir = m.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if cmd.Env, err = c.env(); err != nil {
		logf.Close()
		return err
	}
	setProcAttrs(cmd)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("zkserver: start member %d: %w", m.id, err)
	}
	done := make(chan struct{})
	m.cmd, m.done = cmd, done
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	c.cfg.logger.Info("zookeeper member started", "member", i, "pid", cmd.Process.Pid, "addr", c.Addr(i))
	return nil
}

// WaitReady waits until member i answers srvr with a serving mode.
func (c *Cluster) WaitReady(ctx context.Context, i int) error {
	if err := c.check(i); err != nil {
		return err
	}
	m := c.members[i]
	var last error
	for {
		m.mu.Lock()
		done := m.done
		m.mu.Unlock()
		if done == nil {
			return fmt.Errorf("%w: member %d", ErrNotRunning, i)
		}
		select {
		case <-done:
			return fmt.Errorf("zkserver: member %d exited during start-up: %s", i, c.LogTail(i, 15))
		default:
		}
		// A JVM that is still starting may accept and then say nothing:
		// poll with a short deadline so that readiness is seen promptly.
		pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		mode, err := c.Mode(pctx, i)
		cancel()
		if err == nil && mode != "" {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("zkserver: member %d not serving (%v): %w; log: %s", i, last, ctx.Err(), c.LogTail(i, 15))
		case <-time.After(50 * time.Millisecond):
		}
	}
}
