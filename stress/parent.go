package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/stress/internal/check"
	"github.com/tierlock/tierlock/stress/internal/record"
)

// errRun marks failures to carry out a run (exit status 3), as opposed to
// a run that found violations.
var errRun = errors.New("run failed")

// runner orchestrates the implementations' runs on one ZooKeeper.
type runner struct {
	cfg     config
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
}

// implRun is the raw outcome of one implementation's run.
type implRun struct {
	name        string
	paths       []string
	start       int64 // shared clock when the workers were told to go
	elapsed     time.Duration
	holds       []check.Hold
	slotOf      []int           // worker slot of each process (index: process)
	killed      map[int32]int64 // processes killed by a fault: when they were known dead
	faults      []*faultEvent
	countersOff bool    // a server restarted: its request counters started again
	latencies   []int64 // ns per hold, in the order of holds before checking
	holdTimes   []int64 // ns per complete hold
	perProc     []int64
	perG        []int64 // proc-major
	errors      int64
	errSamples  []string
	tokenKind   string
	requests    int64
	peakZnodes  []int
	peakWatches []int
	result      check.Result
	interrupted bool
	overflow    bool
	losses      int64    // holds that ended by a loss (their Release said so)
	orphans     []string // ephemeral nodes left once every worker exited
	expiries    int64    // worker sessions that expired
}

// setup finds or starts ZooKeeper and connects to it.
func (r *runner) setup(ctx context.Context) error {
	switch c, fromEnv := zkserver.FromEnv(); {
	case len(r.cfg.ZK) > 0:
		r.cluster = externalCluster(r.cfg.ZK)
	case fromEnv:
		r.cluster = c
	default:
		// leader needs an ensemble (with -fault all too); restart works on
		// either.
		members := 1
		var opts []zkserver.Option
		if contains(r.cfg.Faults, faultLeader) || contains(r.cfg.Faults, faultPartition) {
			members = 3
		}
		if contains(r.cfg.Faults, faultPartition) {
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
			return fmt.Errorf("%w: start ZooKeeper: %w", errRun, err)
		}
		r.cluster, r.started = c, true
	}
	r.servers = r.cluster.Addrs()

	conn, events, err := zk.Connect(r.servers, r.cfg.SessionTimeout,
		zk.WithLogInfo(false), zk.WithLogger(discardLogger{}))
	if err != nil {
		return fmt.Errorf("%w: ZooKeeper at %s: %w", errRun, strings.Join(r.servers, ","), err)
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
			errRun, strings.Join(r.servers, ","), r.cfg.ConnectTimeout)
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", errRun, ctx.Err())
	}
	r.root = path.Join(r.cfg.Root, fmt.Sprintf("%s-%d", time.Now().UTC().Format("20060102T150405"), os.Getpid()))
	r.tmp, err = os.MkdirTemp("", "tierlock-stress-")
	if err != nil {
		return fmt.Errorf("%w: %w", errRun, err)
	}
	if r.cfg.Faults != nil {
		// One proxy per worker slot and server, so that a fault can hit one
		// worker's connections and nothing else.
		for range r.cfg.Procs {
			var row []*faultproxy.Proxy
			for _, addr := range r.servers {
				p, err := faultproxy.New(addr)
				if err != nil {
					for _, q := range row {
						q.Close()
					}
					return fmt.Errorf("%w: fault proxy: %w", errRun, err)
				}
				row = append(row, p)
			}
			r.proxies = append(r.proxies, row)
		}
	}
	return nil
}

// workerServers is the server list of the worker in slot: the servers
// themselves, or with -fault the slot's proxies, each worker with its own
// order of the members (go-zookeeper shuffles the list again, so the
// clients spread over the members either way).
func (r *runner) workerServers(slot int) []string {
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

// close removes this run's nodes and files and stops what setup started.
func (r *runner) close() {
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
}

// makePaths creates the lock paths (and their parents) as persistent nodes.
func (r *runner) makePaths(paths []string) error {
	for _, p := range paths {
		parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
		cur := ""
		for _, part := range parts {
			cur += "/" + part
			_, err := r.conn.Create(cur, nil, 0, zk.WorldACL(zk.PermAll))
			if err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return fmt.Errorf("%w: create %s: %w", errRun, cur, err)
			}
		}
	}
	return nil
}

// deleteTree deletes p and everything below it, best effort.
func deleteTree(conn *zk.Conn, p string) {
	for attempt := 0; attempt < 5; attempt++ {
		children, _, err := conn.Children(p)
		if errors.Is(err, zk.ErrNoNode) {
			return
		}
		for _, c := range children {
			deleteTree(conn, p+"/"+c)
		}
		err = conn.Delete(p, -1)
		if err == nil || errors.Is(err, zk.ErrNoNode) {
			return
		}
		time.Sleep(50 * time.Millisecond) // ErrNotEmpty: a node was still going
	}
}

// splitQuota spreads total acquisitions over procs x goroutines.
func splitQuota(total int64, procs, goroutines int) [][]int64 {
	n := int64(procs * goroutines)
	out := make([][]int64, procs)
	for p := range out {
		out[p] = make([]int64, goroutines)
		for g := range out[p] {
			i := int64(p*goroutines + g)
			out[p][g] = total / n
			if i < total%n {
				out[p][g]++
			}
		}
	}
	return out
}

// defaultRecordCap is how many holds a worker can record in a timed run;
// the record file is sparse, so unused room costs nothing.
const defaultRecordCap = 1 << 23

// runImpl runs one implementation: P workers, started together, checked.
func (r *runner) runImpl(ctx context.Context, name string) (*implRun, error) {
	cfg := r.cfg
	base := path.Join(r.root, name)
	run := &implRun{name: name, paths: lockPaths(base, cfg.Paths)}
	if err := r.makePaths(run.paths); err != nil {
		return nil, err
	}
	defer deleteTree(r.conn, base)

	var passthrough io.Writer
	if cfg.Verbose {
		passthrough = r.stderr
	}
	f := &fleet{msgs: make(chan procMsg, 64)}
	defer f.shutdown(true)
	var files []string
	// newSpec describes worker proc (a process; a replacement of a killed
	// worker is a new process in its predecessor's slot).
	newSpec := func(proc, slot int) workerSpec {
		file := filepath.Join(r.tmp, fmt.Sprintf("%s-%d.rec", name, proc))
		files = append(files, file)
		run.slotOf = append(run.slotOf, slot)
		spec := workerSpec{
			Impl: name, Proc: proc, Slot: slot, Procs: cfg.Procs, Goroutines: cfg.Goroutines,
			PathBase: base, NPaths: cfg.Paths,
			Duration: cfg.Duration, Acquisitions: cfg.Acquisitions, Hold: cfg.Hold, HoldMode: cfg.HoldMode, Pick: cfg.Pick,
			HandoffMax: cfg.HandoffMax, HandoffMaxHold: cfg.HandoffMaxHold,
			Servers: r.workerServers(slot), SessionTimeout: cfg.SessionTimeout, ConnectTimeout: cfg.ConnectTimeout,
			RecordFile: file, RecordCap: defaultRecordCap, Seed: uint64(time.Now().UnixNano()),
			Verbose: cfg.Verbose, Faults: cfg.Faults != nil,
		}
		spec.Impl = cfg.implOf(name, slot)
		if cfg.Faults != nil {
			// The parent ends a run with faults (it may extend it until the
			// last fault is recovered from); the duration is a safety net.
			spec.Duration = cfg.Timeout
		}
		if cfg.Acquisitions > 0 {
			// Each goroutine's quota is at most total/(P*G) + 1.
			spec.RecordCap = int64(cfg.Goroutines) * (cfg.Acquisitions/int64(cfg.Procs*cfg.Goroutines) + 1)
		}
		return spec
	}
	if err := r.preparePeers(ctx, name); err != nil {
		return nil, err
	}
	for i := range cfg.Procs {
		w, err := startWorker(r.exe, newSpec(i, i), f.msgs, passthrough)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errRun, err)
		}
		f.add(w)
	}

	// All workers connect and make their locks before any starts.
	if _, err := f.await(ctx, "ready", cfg.ConnectTimeout+30*time.Second, nil); err != nil {
		return nil, err
	}
	before, err := r.cluster.Counters(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: server counters: %w", errRun, err)
	}
	smp := startSampler(r.conn, r.cluster, run.paths, cfg.Sample)
	bar := newProgress(r.stderr, r.showBar, name, cfg)
	progress := map[int]int64{} // by process: a replacement's count adds to its predecessor's
	onProgress := func(m procMsg) {
		if m.msg.Type == "progress" {
			progress[m.proc] = m.msg.N
			var sum int64
			for _, n := range progress {
				sum += n
			}
			bar.update(sum)
		}
	}
	run.start = record.Now()
	start := time.Now()
	f.broadcast(cmdGo)
	var interrupted bool
	if cfg.Faults != nil {
		fr := newFaultRun(r, run, f, start, func(proc, slot int) (*workerProc, error) {
			return startWorker(r.exe, newSpec(proc, slot), f.msgs, passthrough)
		})
		interrupted, err = fr.drive(ctx, onProgress)
	} else {
		interrupted, err = f.await(ctx, "done", cfg.Timeout, onProgress)
	}
	run.elapsed = time.Since(start)
	bar.finish()
	run.peakZnodes, run.peakWatches, run.requests = smp.finish()
	if err != nil {
		return nil, err
	}
	run.interrupted = interrupted
	after, err := r.cluster.Counters(context.Background())
	if err != nil {
		return nil, fmt.Errorf("%w: server counters: %w", errRun, err)
	}
	// Subtract what stress itself sent: the sampler's requests and
	// four-letter words, and the mntr of the "after" reading (the server
	// counts it before answering). Session pings of the workers, one per
	// connection every third of the session timeout, stay in.
	run.requests = after.PacketsReceived - before.PacketsReceived - run.requests - int64(r.cluster.Size())
	if run.countersOff {
		run.requests = -1
	}

	f.broadcast(cmdExit)
	results := make([]*workerResult, f.size())
	if _, err := f.await(context.Background(), "result", 30*time.Second, func(m procMsg) {
		if m.msg.Type == "result" {
			results[m.proc] = m.msg.Result
		}
	}); err != nil {
		return nil, err
	}
	f.shutdown(false)
	run.orphans = r.orphans(base)
	return run, r.collect(run, results, files)
}

// orphans lists the ephemeral nodes left under base once every worker has
// exited: none may be, once their sessions are closed. A killed worker's
// session ends only when the server expires it, so this waits up to the
// session timeout + 5s for the list to empty.
func (r *runner) orphans(base string) []string {
	deadline := time.Now().Add(r.cfg.SessionTimeout + 5*time.Second)
	for {
		var left []string
		var walk func(p string)
		walk = func(p string) {
			kids, _, err := r.conn.Children(p)
			if err != nil {
				return
			}
			for _, k := range kids {
				c := p + "/" + k
				if _, st, err := r.conn.Get(c); err == nil && st.EphemeralOwner != 0 {
					left = append(left, fmt.Sprintf("%s (session %x)", c, st.EphemeralOwner))
				}
				walk(c)
			}
		}
		walk(base)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// collect reads the workers' results and records and checks them.
// Counts are kept by worker slot: a killed worker's and its replacement's
// add up.
func (r *runner) collect(run *implRun, results []*workerResult, files []string) error {
	g := r.cfg.Goroutines
	run.perProc = make([]int64, r.cfg.Procs)
	run.perG = make([]int64, r.cfg.Procs*g)
	var counted, complete int64
	for p, res := range results {
		if _, killed := run.killed[int32(p)]; killed {
			continue // its holds are counted from its records below
		}
		if res == nil {
			return fmt.Errorf("%w: worker %d sent no result", errRun, p)
		}
		slot := run.slotOf[p]
		for i, n := range res.PerGoroutine {
			run.perProc[slot] += n
			run.perG[slot*g+i] += n
			counted += n
		}
		run.errors += res.Errors
		run.errSamples = append(run.errSamples, res.ErrorSamples...)
		run.overflow = run.overflow || res.Overflow
		run.tokenKind = res.TokenKind
		run.losses += res.Losses
		run.expiries += res.Expiries
	}
	for p, file := range files {
		recs, err := record.Read(file)
		if err != nil {
			return fmt.Errorf("%w: records of worker %d: %w", errRun, p, err)
		}
		os.Remove(file)
		_, killed := run.killed[int32(p)]
		slot := run.slotOf[p]
		for _, h := range recs {
			run.holds = append(run.holds, check.Hold{
				Proc: int32(p), G: h.G, Path: h.Path, Token: h.Token, Enter: h.Enter, Exit: h.Exit, Loss: h.Lost,
			})
			run.latencies = append(run.latencies, h.Latency)
			if h.Exit == 0 {
				continue
			}
			run.holdTimes = append(run.holdTimes, h.Exit-h.Enter)
			if killed {
				run.perProc[slot]++
				if h.G >= 0 && int(h.G) < g {
					run.perG[slot*g+int(h.G)]++
				}
			} else {
				complete++
			}
		}
	}
	if complete != counted {
		run.errors++
		run.errSamples = append(run.errSamples,
			fmt.Sprintf("workers counted %d acquisitions but recorded %d complete holds", counted, complete))
	}
	run.result = check.Check(run.holds, check.Options{
		Tokens:          run.tokenKind != "" && run.name != implMix, // a mix's tokens are of different kinds
		SameNodeHandoff: run.name == implTierHandoff,
		Killed:          run.killed,
	})
	measureRecovery(run, r.cfg.SessionTimeout)
	return nil
}

// fleet is the set of workers of one run and their messages. Workers are
// indexed by process: a worker killed by a fault stays in the list, marked,
// and its replacement is added at the end. The fault injector adds and
// kills workers while the parent's loop reads messages, hence the mutex.
type fleet struct {
	mu     sync.Mutex
	procs  []*workerProc
	killed []bool
	msgs   chan procMsg
	alive  int // workers whose stdout has not closed yet
	done   bool
}

func (f *fleet) add(w *workerProc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.procs = append(f.procs, w)
	f.killed = append(f.killed, false)
	f.alive++
}

// start starts a worker with the next process index and adds it, under
// the lock, so that its first message cannot arrive before it is known.
func (f *fleet) start(fn func(proc int) (*workerProc, error)) (int, *workerProc, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	proc := len(f.procs)
	w, err := fn(proc)
	if err != nil {
		return 0, nil, err
	}
	f.procs = append(f.procs, w)
	f.killed = append(f.killed, false)
	f.alive++
	return proc, w, nil
}

func (f *fleet) size() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.procs)
}

func (f *fleet) get(i int) *workerProc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.procs[i]
}

// markKilled records that worker i is being killed on purpose: its end
// is not a failure.
func (f *fleet) markKilled(i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.killed[i] = true
}

func (f *fleet) isKilled(i int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.killed[i]
}

// live returns the indexes of the workers not killed.
func (f *fleet) live() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []int
	for i, k := range f.killed {
		if !k {
			out = append(out, i)
		}
	}
	return out
}

func (f *fleet) broadcast(cmd string) {
	for _, i := range f.live() {
		f.get(i).send(cmd)
	}
}

// eof counts a worker's end; it reports whether the end was expected (the
// worker was killed by a fault).
func (f *fleet) eof(i int) (expected bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.alive--
	return f.killed[i]
}

// await waits until every worker has sent a message of type typ, calling
// fn for every message. When ctx ends or timeout passes while the workers
// are running (typ "done"), they are told to stop and given a grace period
// to report; interrupted tells that this happened.
func (f *fleet) await(ctx context.Context, typ string, timeout time.Duration, fn func(procMsg)) (interrupted bool, err error) {
	got := make([]bool, f.size())
	n := 0
	want := len(f.live())
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	stopped := false
	stopAll := func() {
		if !stopped {
			stopped = true
			f.broadcast(cmdStop)
			timer.Reset(30 * time.Second)
		}
	}
	ctxDone := ctx.Done()
	for n < want {
		select {
		case m := <-f.msgs:
			switch {
			case m.eof:
				if f.eof(m.proc) || got[m.proc] && typ == "result" {
					continue // killed by a fault, or it reported, then exited, as it should
				}
				return interrupted, fmt.Errorf("%w: %s", errRun, f.get(m.proc).describe())
			case m.msg.Type == "error":
				return interrupted, fmt.Errorf("%w: worker %d: %s", errRun, m.proc, m.msg.Err)
			case m.msg.Type == typ:
				if !got[m.proc] {
					got[m.proc] = true
					n++
				}
			}
			if fn != nil {
				fn(m)
			}
		case <-ctxDone:
			ctxDone = nil
			interrupted = true
			if typ != "done" {
				return interrupted, fmt.Errorf("%w: %w", errRun, ctx.Err())
			}
			stopAll()
		case <-timer.C:
			if typ != "done" || stopped {
				var waiting []string
				for _, i := range f.live() {
					if !got[i] {
						waiting = append(waiting, f.get(i).describe())
					}
				}
				return interrupted, fmt.Errorf("%w: no %q from %d worker(s) within %v:\n  %s",
					errRun, typ, len(waiting), timeout, strings.Join(waiting, "\n  "))
			}
			interrupted = true
			stopAll() // -timeout: stop, then give up if they do not finish
		}
	}
	return interrupted, nil
}

// shutdown waits until every worker has exited and been reaped, killing
// those still running at once (kill) or after a grace period. It is
// idempotent.
func (f *fleet) shutdown(kill bool) {
	if f.done {
		return
	}
	f.done = true
	f.mu.Lock()
	procs := append([]*workerProc(nil), f.procs...)
	f.mu.Unlock()
	if kill {
		for _, w := range procs {
			w.kill()
		}
	}
	grace := time.After(10 * time.Second)
	for {
		f.mu.Lock()
		alive := f.alive
		f.mu.Unlock()
		if alive <= 0 {
			return
		}
		select {
		case m := <-f.msgs:
			if m.eof {
				f.eof(m.proc)
			}
		case <-grace:
			for _, w := range procs {
				w.kill()
			}
			grace = nil
		}
	}
}
