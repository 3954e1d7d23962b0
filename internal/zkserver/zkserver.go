package zkserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// EnvServers names the environment variable that points tests, examples and
// the stress command at an existing ZooKeeper server or ensemble
// (comma-separated host:port list) instead of starting one.
const EnvServers = "TIERLOCK_ZK_SERVERS"

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
	dir         string
	jar         string
	logger      *slog.Logger
	startupWait time.Duration
}

// Option configures Start and StartEnsemble.
type Option func(*config)

// WithTickTime sets ZooKeeper's tickTime. Session timeouts are bounded by
// 2 and 20 ticks unless WithSessionTimeouts says otherwise, so a small tick
// (the default is 200ms) makes session-expiry tests fast.
func WithTickTime(d time.Duration) Option { return func(c *config) { c.tickTime = d } }

// WithSyncLimit sets ZooKeeper's syncLimit (default 10): how many ticks a
// follower may go without hearing from the leader (and the leader without
// an answer from a follower) before it gives up on it. A follower cut from
// the leader keeps serving its clients, pings included, for that long.
func WithSyncLimit(ticks int) Option { return func(c *config) { c.syncLimit = ticks } }

// WithInitLimit sets ZooKeeper's initLimit (default 20): how many ticks a
// follower may take to connect to the leader and sync with it.
func WithInitLimit(ticks int) Option { return func(c *config) { c.initLimit = ticks } }

// WithSessionTimeouts sets the bounds the server applies to the session
// timeout that clients ask for.
func WithSessionTimeouts(min, max time.Duration) Option {
	return func(c *config) { c.minSession, c.maxSession = min, max }
}

// WithDir puts the servers' data and logs under dir instead of a new
// temporary directory (which Close removes).
func WithDir(dir string) Option { return func(c *config) { c.dir = dir } }

// WithLogger sets where progress is logged (default: discarded).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithStartupTimeout bounds how long Start waits for every member to serve.
func WithStartupTimeout(d time.Duration) Option { return func(c *config) { c.startupWait = d } }

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
	peerPort   int
	electPort  int
	dir        string
	cfgFile    string
	logFile    string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// FromEnv returns a Cluster for the servers named by TIERLOCK_ZK_SERVERS, or
// false when the variable is unset or empty.
func FromEnv() (*Cluster, bool) {
	v := strings.TrimSpace(os.Getenv(EnvServers))
	if v == "" {
		return nil, false
	}
	var addrs []string
	for _, a := range strings.Split(v, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	return &Cluster{external: addrs}, len(addrs) > 0
}

// Start starts one standalone server and waits until it serves.
func Start(ctx context.Context, opts ...Option) (*Cluster, error) {
	return StartEnsemble(ctx, 1, opts...)
}

// StartEnsemble starts n servers (n == 1: standalone; n >= 3: a quorum
// ensemble) and waits until every member serves.
func StartEnsemble(ctx context.Context, n int, opts ...Option) (*Cluster, error) {
	if n < 1 || n == 2 {
		return nil, fmt.Errorf("zkserver: ensemble size %d: want 1 or at least 3", n)
	}
	cfg := config{tickTime: 200 * time.Millisecond, syncLimit: 10, initLimit: 20, jar: DefaultJar, startupWait: 60 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.syncLimit < 1 || cfg.initLimit < 1 {
		return nil, fmt.Errorf("zkserver: syncLimit %d, initLimit %d: both must be at least 1", cfg.syncLimit, cfg.initLimit)
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	if _, err := exec.LookPath("java"); err != nil {
		return nil, fmt.Errorf("%w: java: %v", ErrNotInstalled, err)
	}
	if _, err := os.Stat(cfg.jar); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotInstalled, err)
	}
	c := &Cluster{cfg: cfg}
	if c.cfg.dir == "" {
		d, err := os.MkdirTemp("", "tierlock-zk-")
		if err != nil {
			return nil, fmt.Errorf("zkserver: %w", err)
		}
		c.cfg.dir, c.ownDir = d, true
	}
	// Ports are picked free, but another process can take one before the
	// JVM binds it; a failed start is retried with fresh ports.
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = c.layout(n); err != nil {
			break
		}
		if err = c.startAll(ctx); err == nil {
			return c, nil
		}
		c.stopAll()
		c.closePeerLinks()
		if ctx.Err() != nil {
			break
		}
		cfg.logger.Warn("zookeeper start failed, retrying", "err", err)
	}
	c.Close()
	return nil, err
}

func (c *Cluster) layout(n int) error {
	ports, err := freePorts(3 * n)
	if err != nil {
		return err
	}
	c.members = make([]*member, n)
	for i := range c.members {
		c.members[i] = &member{
			id: i + 1, clientPort: ports[3*i], peerPort: ports[3*i+1], electPort: ports[3*i+2],
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
	// Container nodes are reaped by a periodic task; run it often enough
	// that empty lock directories disappear during a test run.
	b.WriteString("znode.container.checkIntervalMs=1000\n")
	if c.cfg.minSession > 0 {
		fmt.Fprintf(&b, "minSessionTimeout=%d\n", c.cfg.minSession.Milliseconds())
	}
	if c.cfg.maxSession > 0 {
		fmt.Fprintf(&b, "maxSessionTimeout=%d\n", c.cfg.maxSession.Milliseconds())
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
	return nil
}

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
	if _, err := os.Stat(slf4jSimpleJar); err == nil {
		cp += ":" + slf4jSimpleJar
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
		"-cp", cp, main, m.cfgFile)
	cmd.Dir = m.dir
	cmd.Stdout, cmd.Stderr = logf, logf
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

// Size reports the number of members (external servers included).
func (c *Cluster) Size() int {
	if c.external != nil {
		return len(c.external)
	}
	return len(c.members)
}

// External reports whether the cluster points at servers it did not start.
func (c *Cluster) External() bool { return c.external != nil }

// Addr returns the client address of member i.
func (c *Cluster) Addr(i int) string {
	if c.external != nil {
		return c.external[i]
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.members[i].clientPort))
}

// Addrs returns the client addresses of every member.
func (c *Cluster) Addrs() []string {
	out := make([]string, c.Size())
	for i := range out {
		out[i] = c.Addr(i)
	}
	return out
}

// Dir returns the directory holding the members' data and logs.
func (c *Cluster) Dir() string { return c.cfg.dir }

func (c *Cluster) check(i int) error {
	if i < 0 || i >= c.Size() {
		return fmt.Errorf("%w: %d", ErrBadMember, i)
	}
	return nil
}

func (c *Cluster) control(i int) (*member, error) {
	if c.external != nil {
		return nil, ErrExternal
	}
	if err := c.check(i); err != nil {
		return nil, err
	}
	return c.members[i], nil
}

// Running reports whether member i's process is alive.
func (c *Cluster) Running(i int) bool {
	m, err := c.control(i)
	if err != nil {
		return c.external != nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cmd != nil
}

// Pid returns the process id of member i, or 0 when it is not running.
func (c *Cluster) Pid(i int) int {
	m, err := c.control(i)
	if err != nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// Stop stops member i gracefully (SIGTERM) and waits for it to exit.
func (c *Cluster) Stop(i int) error { return c.signal(i, false) }

// Kill stops member i with SIGKILL, as a crash would, and waits for it.
func (c *Cluster) Kill(i int) error { return c.signal(i, true) }

func (c *Cluster) signal(i int, kill bool) error {
	m, err := c.control(i)
	if err != nil {
		return err
	}
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.cmd = nil
	m.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("%w: member %d", ErrNotRunning, i)
	}
	terminate(cmd, kill)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		terminate(cmd, true)
		<-done
	}
	c.cfg.logger.Info("zookeeper member stopped", "member", i, "kill", kill)
	return nil
}

// Restart starts member i again with its data kept and waits until it
// serves. The member must be stopped.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	if _, err := c.control(i); err != nil {
		return err
	}
	if err := c.launch(i); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.startupWait)
	defer cancel()
	defer c.openElectionFrom(i)()
	return c.WaitReady(ctx, i)
}

// FourLetter sends a four-letter word (ruok, srvr, mntr, wchc, cons ...) to
// member i and returns the answer.
func (c *Cluster) FourLetter(ctx context.Context, i int, word string) (string, error) {
	if err := c.check(i); err != nil {
		return "", err
	}
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", c.Addr(i))
	if err != nil {
		return "", fmt.Errorf("zkserver: %s to member %d: %w", word, i, err)
	}
	defer conn.Close()
	deadline, _ := dctx.Deadline()
	_ = conn.SetDeadline(deadline)
	if _, err := io.WriteString(conn, word); err != nil {
		return "", fmt.Errorf("zkserver: %s to member %d: %w", word, i, err)
	}
	out, err := io.ReadAll(conn)
	if err != nil && len(out) == 0 {
		return "", fmt.Errorf("zkserver: %s to member %d: %w", word, i, err)
	}
	return string(out), nil
}

// Mode returns member i's mode as srvr reports it: "standalone", "leader"
// or "follower"; "" with an error when it does not serve.
func (c *Cluster) Mode(ctx context.Context, i int) (string, error) {
	out, err := c.FourLetter(ctx, i, "srvr")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("zkserver: member %d not serving: %q", i, strings.TrimSpace(out))
}

// Leader returns the index of the member that leads (0 for a standalone
// server).
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	for i := 0; i < c.Size(); i++ {
		mode, err := c.Mode(ctx, i)
		if err == nil && (mode == "leader" || mode == "standalone") {
			return i, nil
		}
	}
	return -1, ErrNoLeader
}

// Mntr returns member i's monitoring counters (the mntr four-letter word)
// as a map from name (zk_packets_received, zk_znode_count, zk_watch_count
// ...) to value.
func (c *Cluster) Mntr(ctx context.Context, i int) (map[string]string, error) {
	out, err := c.FourLetter(ctx, i, "mntr")
	if err != nil {
		return nil, err
	}
	m := make(map[string]string)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "\t"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("zkserver: mntr from member %d: %q", i, strings.TrimSpace(out))
	}
	return m, nil
}

// Counters are server counters summed over the serving members.
type Counters struct {
	PacketsReceived int64 // requests received, pings included
	ZnodeCount      int64 // largest znode count among members
	WatchCount      int64 // watches registered, summed over members
}

// Counters reads mntr from every serving member.
func (c *Cluster) Counters(ctx context.Context) (Counters, error) {
	var out Counters
	var served bool
	var last error
	for i := 0; i < c.Size(); i++ {
		m, err := c.Mntr(ctx, i)
		if err != nil {
			last = err
			continue
		}
		served = true
		out.PacketsReceived += atoi(m["zk_packets_received"])
		out.WatchCount += atoi(m["zk_watch_count"])
		out.ZnodeCount = max(out.ZnodeCount, atoi(m["zk_znode_count"]))
	}
	if !served {
		return out, last
	}
	return out, nil
}

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// LogTail returns the last n lines of member i's server log.
func (c *Cluster) LogTail(i, n int) string {
	if c.external != nil || c.check(i) != nil {
		return ""
	}
	b, err := os.ReadFile(c.members[i].logFile)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (c *Cluster) stopAll() {
	for i := range c.members {
		_ = c.Kill(i)
	}
}

// Close stops every member it started and removes the temporary directory.
// It is safe to call more than once and does nothing for external servers.
func (c *Cluster) Close() error {
	if c == nil || c.external != nil {
		return nil
	}
	c.stopAll()
	c.closePeerLinks()
	if c.ownDir {
		c.ownDir = false
		return os.RemoveAll(c.cfg.dir)
	}
	return nil
}

// freePorts reserves n distinct free TCP ports on 127.0.0.1 by listening on
// them at once, then releases them for the server to bind.
func freePorts(n int) ([]int, error) {
	ports := make([]int, n)
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("zkserver: free port: %w", err)
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

// Resolve picks the servers a program uses: flagValue (a comma-separated
// host:port list from its -zk flag) if set, else TIERLOCK_ZK_SERVERS, else
// a standalone server started here. It returns the addresses, a function
// that stops what it started (a no-op otherwise), and where they came from.
func Resolve(ctx context.Context, flagValue string, opts ...Option) (servers []string, stop func(), source string, err error) {
	if flagValue != "" {
		return strings.Split(flagValue, ","), func() {}, "-zk", nil
	}
	if c, ok := FromEnv(); ok {
		return c.Addrs(), func() {}, EnvServers, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	c, err := Start(ctx, opts...)
	if err != nil {
		return nil, nil, "", err
	}
	return c.Addrs(), func() { c.Close() }, "started here", nil
}
