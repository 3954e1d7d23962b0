package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/stress/internal/proto"
)

// stress -idle-cost: what idle sessions cost one server, and their own
// process, for each implementation beside go-zookeeper's plain
// connections. The flags are in idle_flags.go, the sessions
// and the wire count in idle_impl.go, the table in idle_table.go.

// idlePhase is what one implementation's sessions (or none: the empty
// server, impl "") cost over a window.
type idlePhase struct {
	impl          proto.Impl
	opened, alive int           // sessions open at the window's start, and still the same at its end
	failed        int           // sessions that failed to open
	window        time.Duration // as measured
	serverCPU     time.Duration // -1: unknown
	clientCPU     time.Duration
	packets       int64 // -1: unknown
	wire          wireCounts
	errs          []string // the first few failures
}

// idleServer is the server measured.
type idleServer struct {
	cluster *zkserver.Cluster
	source  string
	stop    func()
}

// idleReading is one edge of a window.
type idleReading struct {
	at        time.Time
	serverCPU time.Duration // -1: unknown
	client    time.Duration
	packets   int64 // -1: unknown
	wire      wireCounts
}

// runIdleCost is stress -idle-cost; it returns the exit status.
func runIdleCost(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseIdleFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "stress: %s\nRun 'stress -idle-cost -h' for the flags.\n", strings.TrimPrefix(err.Error(), "usage: "))
		return exitUsage
	}
	// Each session is a descriptor here and one at a server started here,
	// which inherits the limit.
	if err := raiseNoFile(uint64(cfg.Sessions) + 256); err != nil {
		fmt.Fprintln(stderr, "stress: idle-cost:", err)
		return exitRun
	}
	srv, err := idleServerFor(ctx, cfg, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "stress: idle-cost:", err)
		return exitRun
	}
	defer srv.stop()
	info := coldInfo{servers: srv.cluster.Addrs(), source: srv.source, load0: loadAverage(), started: time.Now().UTC()}
	var phases []idlePhase
	if cfg.Baseline {
		// After -idle-settle, as the sessions' windows: the server's start
		// is not its idle cost.
		fmt.Fprintf(stderr, "stress: idle-cost: the empty server: settling %v, then measuring %v\n", cfg.Settle, cfg.For)
		p := idlePhase{serverCPU: -1, packets: -1}
		if sleepCtx(ctx, cfg.Settle) {
			p = srv.measure(ctx, cfg.For, nil)
		}
		phases = append(phases, p)
	}
	for _, im := range cfg.Impls {
		if ctx.Err() != nil {
			break
		}
		phases = append(phases, srv.phase(ctx, cfg, im, stderr))
	}
	info.load1 = loadAverage()
	printIdle(stdout, cfg, info, phases)
	return idleStatus(ctx, cfg, phases, stderr)
}

// raiseNoFile raises the soft limit on open files to at least n (up to
// the hard limit), explicitly, so that the server started here inherits it.
func raiseNoFile(n uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("open files limit: %w", err)
	}
	if lim.Cur >= n {
		return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	if lim.Max < n {
		return fmt.Errorf("open files limit %d (hard), below the %d the sessions need: raise it (ulimit -Hn) or lower -idle-sessions", lim.Max, n)
	}
	lim.Cur = n
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
}

// idleServerFor finds or starts the one server: -zk, else
// $TIERLOCK_ZK_SERVERS, else a standalone one started here.
func idleServerFor(ctx context.Context, cfg idleConfig, stderr io.Writer) (*idleServer, error) {
	if c, ok := externalServer(cfg.ZK); ok {
		if c.Size() != 1 {
			return nil, fmt.Errorf("$%s names %d servers: -idle-cost measures one", zkserver.EnvServers, c.Size())
		}
		source := "-zk"
		if len(cfg.ZK) == 0 {
			source = "$" + zkserver.EnvServers
		}
		if conf, err := c.Conf(ctx, 0); err == nil {
			if m, _ := strconv.Atoi(conf["maxClientCnxns"]); m > 0 && m < cfg.Sessions {
				return nil, fmt.Errorf("%s takes at most %d connections from one address (maxClientCnxns): set it to 0 or lower -idle-sessions", c.Addr(0), m)
			}
		}
		return &idleServer{cluster: c, source: source + ", server CPU n/a", stop: func() {}}, nil
	}
	fmt.Fprintf(stderr, "stress: starting a local ZooKeeper, tickTime %v (use -zk or $%s for an existing one)\n", cfg.Tick, zkserver.EnvServers)
	sctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	c, err := zkserver.Start(sctx, zkserver.WithTickTime(cfg.Tick))
	if err != nil {
		return nil, fmt.Errorf("start ZooKeeper: %w", err)
	}
	source := fmt.Sprintf("started here, tickTime %v, maxClientCnxns=0, pid %d", cfg.Tick, c.Pid(0))
	return &idleServer{cluster: c, source: source, stop: func() { _ = c.Close() }}, nil
}

// externalServer is the server -zk names, else $TIERLOCK_ZK_SERVERS's;
// false for none.
func externalServer(zk []string) (*zkserver.Cluster, bool) {
	if len(zk) == 0 {
		return zkserver.FromEnv()
	}
	// zkserver makes a Cluster of external servers from the variable only.
	old, had := os.LookupEnv(zkserver.EnvServers)
	os.Setenv(zkserver.EnvServers, strings.Join(zk, ","))
	defer func() {
		if had {
			os.Setenv(zkserver.EnvServers, old)
		} else {
			os.Unsetenv(zkserver.EnvServers)
		}
	}()
	return zkserver.FromEnv()
}

// phase opens the sessions of im, lets them settle, measures them and
// closes them, then waits for the server to see them gone.
func (s *idleServer) phase(ctx context.Context, cfg idleConfig, im proto.Impl, stderr io.Writer) idlePhase {
	conns0 := s.connections(ctx)
	w := &wireCount{}
	fmt.Fprintf(stderr, "stress: idle-cost: %s: opening %d sessions %v apart\n", im, cfg.Sessions, cfg.Stagger)
	sessions, failed, errs := openAll(ctx, im, s.cluster.Addrs(), cfg, w)
	fmt.Fprintf(stderr, "stress: idle-cost: %s: %d open (%d failed); settling %v, then measuring %v\n", im, len(sessions), failed, cfg.Settle, cfg.For)
	var p idlePhase
	if sleepCtx(ctx, cfg.Settle) {
		p = s.measure(ctx, cfg.For, w)
	}
	p.impl, p.opened, p.failed, p.errs = im, len(sessions), failed, errs
	for _, c := range sessions {
		if c.alive() {
			p.alive++
		}
	}
	closeAll(sessions)
	// The server closes the sessions as their closeSession arrive: wait
	// (a bounded while) until its connections are back to where they were.
	for deadline := time.Now().Add(cfg.SessionTimeout + 30*time.Second); ctx.Err() == nil && time.Now().Before(deadline); {
		if n := s.connections(ctx); n < 0 || conns0 < 0 || n <= conns0 {
			break
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	sleepCtx(ctx, 2*time.Second)
	return p
}

// openAll opens cfg.Sessions sessions, one every cfg.Stagger, and returns
// those that opened, how many failed, and the first few errors.
func openAll(ctx context.Context, im proto.Impl, servers []string, cfg idleConfig, w *wireCount) ([]idleSession, int, []string) {
	var (
		mu       sync.Mutex
		sessions []idleSession
		failed   int
		errs     []string
		wg       sync.WaitGroup
	)
	for i := 0; i < cfg.Sessions && sleepCtx(ctx, cfg.Stagger*time.Duration(min(i, 1))); i++ {
		wg.Go(func() {
			c, err := openIdle(ctx, im, servers, cfg, w)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				if len(errs) < 3 {
					errs = append(errs, err.Error())
				}
				return
			}
			sessions = append(sessions, c)
		})
	}
	wg.Wait()
	return sessions, failed, errs
}

// closeAll closes the sessions, 64 at a time.
func closeAll(sessions []idleSession) {
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for _, c := range sessions {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c.close()
		})
	}
	wg.Wait()
}

// measure reads the edges of a window of length d (w nil: no sessions);
// a window cut short by ctx is marked by a zero window.
func (s *idleServer) measure(ctx context.Context, d time.Duration, w *wireCount) idlePhase {
	from := s.read(ctx, w)
	if !sleepCtx(ctx, d) {
		return idlePhase{serverCPU: -1, packets: -1}
	}
	to := s.read(ctx, w)
	p := idlePhase{window: to.at.Sub(from.at), serverCPU: -1, packets: -1, clientCPU: to.client - from.client, wire: to.wire.minus(from.wire)}
	if from.serverCPU >= 0 && to.serverCPU >= 0 {
		p.serverCPU = to.serverCPU - from.serverCPU
	}
	if from.packets >= 0 && to.packets >= 0 {
		// The closing mntr is counted before it is answered.
		p.packets = to.packets - from.packets - 1
	}
	return p
}

// read takes one edge: the server's CPU and received packets, this
// process's CPU and the sessions' wire counts.
func (s *idleServer) read(ctx context.Context, w *wireCount) idleReading {
	r := idleReading{at: time.Now(), serverCPU: -1, packets: -1, client: selfCPU()}
	if w != nil {
		r.wire = w.read()
	}
	if d, err := s.cluster.CPU(0); err == nil {
		r.serverCPU = d
	}
	if m, err := s.cluster.Mntr(ctx, 0); err == nil {
		if n, err := strconv.ParseInt(m["zk_packets_received"], 10, 64); err == nil {
			r.packets = n
		}
	}
	return r
}

// connections is the server's open client connections (mntr
// zk_num_alive_connections), -1 if unknown.
func (s *idleServer) connections(ctx context.Context) int64 {
	m, err := s.cluster.Mntr(ctx, 0)
	if err != nil {
		return -1
	}
	n, err := strconv.ParseInt(m["zk_num_alive_connections"], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// selfCPU is this process's user and system time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// idleStatus is the exit status: a run cut short (exitRun) before a
// session that failed to open or was lost (exitViolation).
func idleStatus(ctx context.Context, cfg idleConfig, phases []idlePhase, stderr io.Writer) int {
	want := len(cfg.Impls)
	if cfg.Baseline {
		want++
	}
	failed, short := false, ctx.Err() != nil || len(phases) < want
	for _, p := range phases {
		short = short || p.window == 0
		failed = failed || p.failed > 0 || p.alive < p.opened
	}
	switch {
	case short:
		fmt.Fprintln(stderr, "stress: idle-cost: interrupted: not every implementation was measured")
		return exitRun
	case failed:
		return exitViolation
	}
	return exitOK
}
