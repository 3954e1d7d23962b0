package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"

	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/linear"
	"github.com/tierlock/tierlock/internal/redisserver"
	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/stress/internal/fault"
	"github.com/tierlock/tierlock/stress/internal/fleet"
	"github.com/tierlock/tierlock/stress/internal/proto"
)

// Run is the raw outcome of one implementation's run.
type Run struct {
	Name        proto.Impl
	Paths       []string
	Start       int64 // shared clock when the workers were told to go
	Elapsed     time.Duration
	Holds       []exclusion.Hold
	SlotOf      []int                       // worker slot of each process (index: process)
	Killed      map[int32]int64             // processes killed by a fault: when they were known dead
	Paused      map[int32][]exclusion.Pause // processes stopped by the pause fault: their pauses
	Faults      []*fault.Event
	CountersOff bool    // a server restarted: its request counters started again
	Latencies   []int64 // ns per hold, in the order of holds before checking
	// With the rw recipe: the acquire latencies of reads and of writes.
	ReadLatencies, WriteLatencies []int64
	HoldTimes                     []int64 // ns per complete hold
	PerProc                       []int64 // acquisitions by worker slot
	PerG                          []int64 // by worker slot and goroutine, slot-major
	Errors                        int64
	ErrSamples                    []string
	TokenKind                     string
	Requests                      int64 // requests the servers received in the window; -1 with CountersOff
	// Window is how the run was counted: acquisitions, requests and
	// processor time inside the measured window, and the work done after
	// it; Limits, the physical limits measured right before the run (nil:
	// not measured).
	Window      Window
	Limits      *Limits
	PeakZnodes  []int
	PeakWatches []int
	Result      exclusion.Result
	Porcupine   linear.Result // the holds and the fenced store's writes through Porcupine (internal/linear)
	Interrupted bool
	Overflow    bool
	Losses      int64    // holds that ended by a loss (their Release said so)
	Orphans     []string // ephemeral nodes left once every worker exited
	Expiries    int64    // worker sessions that expired
	// Writes is the verdict on the holds' writes to the guarded resources
	// (runs with faults and -writes); nil: none.
	Writes *WritesCheck
}

// Runner carries out the implementations' runs on one ZooKeeper.
type Runner struct {
	cfg     Config
	exe     string
	stderr  io.Writer
	showBar bool

	cluster *zkserver.Cluster
	started bool // the cluster was started here
	servers []string
	conn    *zk.Conn // the parent's own: lock paths, sampling, clean-up
	events  sync.WaitGroup
	root    string // this run's ZooKeeper root
	tmp     string // worker record files

	// With -fault: the workers' proxies, by worker slot and server.
	proxies [][]*faultproxy.Proxy

	// The redis-server of the redsync runs (redis.go): started here
	// (redisStarted) or given (UseRedis), and the parent's connection to
	// it, which reads its counters.
	redis        *redisserver.Server
	redisStarted bool
	rinfo        *redis.Client
}

// New returns a runner of cfg's runs whose workers run exe; it says what
// it does on stderr, with a progress bar when showBar is set.
func New(cfg Config, exe string, stderr io.Writer, showBar bool) *Runner {
	return &Runner{cfg: cfg, exe: exe, stderr: stderr, showBar: showBar}
}

// Servers are the ZooKeeper servers of the runs.
func (r *Runner) Servers() []string { return r.servers }

// Started reports whether the runner started the servers itself.
func (r *Runner) Started() bool { return r.started }

// UseCluster makes the runs use c, servers started (and stopped) by the
// caller, which the runner can then read the processor time of; call it
// before Setup.
func (r *Runner) UseCluster(c *zkserver.Cluster) { r.cluster = c }

// Setup finds or starts ZooKeeper and connects to it.
func (r *Runner) Setup(ctx context.Context) error {
	switch c, fromEnv := zkserver.FromEnv(); {
	case r.cluster != nil:
	case len(r.cfg.ZK) > 0:
		r.cluster = externalCluster(r.cfg.ZK)
	case fromEnv:
		r.cluster = c
	default:
		if err := r.startServers(ctx); err != nil {
			return err
		}
	}
	r.servers = r.cluster.Addrs()

	conn, events, err := zk.Connect(r.servers, r.cfg.SessionTimeout,
		zk.WithLogInfo(false), zk.WithLogger(discardLogger{}))
	if err != nil {
		return fmt.Errorf("%w: ZooKeeper at %s: %w", fleet.ErrRun, strings.Join(r.servers, ","), err)
	}
	r.conn = conn
	ready := make(chan struct{})
	r.events.Add(1)
	go func() {
		defer r.events.Done()
		var once sync.Once
		for ev := range events {
			if ev.State == zk.StateHasSession {
				once.Do(func() { close(ready) })
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(r.cfg.ConnectTimeout):
		return fmt.Errorf("%w: ZooKeeper at %s did not answer within %v (-connect-timeout)",
			fleet.ErrRun, strings.Join(r.servers, ","), r.cfg.ConnectTimeout)
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", fleet.ErrRun, ctx.Err())
	}
	if err := r.setupRedis(ctx); err != nil {
		return err
	}
	r.root = path.Join(r.cfg.Root, fmt.Sprintf("%s-%d", time.Now().UTC().Format("20060102T150405"), os.Getpid()))
	r.tmp, err = os.MkdirTemp("", "tierlock-stress-")
	if err != nil {
		return fmt.Errorf("%w: %w", fleet.ErrRun, err)
	}
	if r.cfg.Faults != nil {
		return r.startProxies()
	}
	return nil
}

// startProxies starts one fault proxy per worker slot and server, so that
// a fault can hit one worker's connections and nothing else.
func (r *Runner) startProxies() error {
	for range r.cfg.Procs {
		var row []*faultproxy.Proxy
		for _, addr := range r.servers {
			p, err := faultproxy.New(addr)
			if err != nil {
				for _, q := range row {
					q.Close()
				}
				return fmt.Errorf("%w: fault proxy: %w", fleet.ErrRun, err)
			}
			row = append(row, p)
		}
		r.proxies = append(r.proxies, row)
	}
	return nil
}

// startServers starts local servers for the run: one, or an ensemble of
// three for the faults that need one.
func (r *Runner) startServers(ctx context.Context) error {
	// leader needs an ensemble (with -fault all too); restart works on
	// either.
	members := 1
	var opts []zkserver.Option
	if slices.Contains(r.cfg.Faults, fault.Leader) || slices.Contains(r.cfg.Faults, fault.Partition) {
		members = 3
	}
	if slices.Contains(r.cfg.Faults, fault.Partition) {
		// Every server-to-server connection through a proxy stress
		// controls, so that a follower can be cut from its peers while
		// its clients stay connected.
		opts = append(opts, zkserver.WithPeerProxies())
	}
	what := "a local ZooKeeper"
	if members > 1 {
		what = fmt.Sprintf("a local ZooKeeper ensemble of %d", members)
	}
	fmt.Fprintf(r.stderr, "stress: starting %s (use -zk or $%s for an existing one)\n", what, zkserver.EnvServers)
	sctx, cancel := context.WithTimeout(ctx, 120*time.Second)
	c, err := zkserver.StartEnsemble(sctx, members, opts...)
	cancel()
	if err != nil {
		return fmt.Errorf("%w: start ZooKeeper: %w", fleet.ErrRun, err)
	}
	r.cluster, r.started = c, true
	return nil
}

// workerServers is the server list of the worker in slot: the servers
// themselves, or with -fault the slot's proxies, each worker with its own
// order of the members (go-zookeeper shuffles the list again, so the
// clients spread over the members either way). With Config.Spread a worker
// gets one member, slot mod n: a deterministic spread.
func (r *Runner) workerServers(slot int) []string {
	if r.proxies == nil && r.cfg.Spread && len(r.servers) > 1 {
		return []string{r.servers[slot%len(r.servers)]}
	}
	if r.proxies == nil {
		return r.servers
	}
	row := r.proxies[slot]
	out := make([]string, len(row))
	for i := range row {
		out[i] = row[(i+slot)%len(row)].Addr()
	}
	return out
}

// externalCluster returns a zkserver.Cluster for servers given by -zk.
// zkserver makes one for external servers only from its environment
// variable, so the variable is set for that one call.
func externalCluster(servers []string) *zkserver.Cluster {
	old, had := os.LookupEnv(zkserver.EnvServers)
	os.Setenv(zkserver.EnvServers, strings.Join(servers, ","))
	c, _ := zkserver.FromEnv()
	if had {
		os.Setenv(zkserver.EnvServers, old)
	} else {
		os.Unsetenv(zkserver.EnvServers)
	}
	return c
}

// Close removes this run's nodes and files and stops what Setup started.
func (r *Runner) Close() {
	if r.conn != nil {
		if r.root != "" {
			deleteTree(r.conn, r.root)
		}
		r.conn.Close()
		r.events.Wait()
	}
	for _, row := range r.proxies {
		for _, p := range row {
			p.Close()
		}
	}
	if r.tmp != "" {
		os.RemoveAll(r.tmp)
	}
	if r.started {
		r.cluster.Close()
	}
	r.closeRedis()
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}
