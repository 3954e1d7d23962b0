package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/stress/internal/proto"
)

// stress -cold: the latency of an uncontended Lock first on a connection
// and after an idle spell, for each implementation beside zk.Lock, in one
// run that lasts about the longest spell. The flags are in cold_flags.go,
// the connections in cold_impl.go, the table in cold_table.go.

// coldJob is one connection of the run: it starts at start (after the
// run's), takes the lock at first once, idles for its spell, then takes
// the lock at cold, timed.
type coldJob struct {
	impl, spell int // indexes into coldConfig.Impls and .Idle
	start       time.Duration
	first, cold string
}

// coldCell is what one row of one implementation measured.
type coldCell struct {
	lat      []time.Duration // Locks that returned the lock
	failed   int             // Locks that failed, or were never made (no connection, a failed first Lock)
	unlocked int             // of lat, Locks whose release then failed
	errs     []string        // the first few failures
}

// coldRun carries out a run's jobs and gathers their figures.
type coldRun struct {
	cfg     coldConfig
	servers []string
	t0      time.Time

	mu    sync.Mutex   // guards cells and the progress lines written to stderr
	cells [][]coldCell // [impl][row]: row 0 the first Lock, row s+1 after spell s

	left   []atomic.Int64 // jobs of each spell not yet ended
	stderr io.Writer
}

// runCold is stress -cold; it returns the exit status.
func runCold(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseColdFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "stress: %s\nRun 'stress -cold -h' for the flags.\n", strings.TrimPrefix(err.Error(), "usage: "))
		return exitUsage
	}
	servers, stop, source, err := coldServers(ctx, cfg, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "stress: cold:", err)
		return exitRun
	}
	defer stop()
	setup, err := dialConn(ctx, servers, cfg, false)
	if err != nil {
		fmt.Fprintln(stderr, "stress: cold:", err)
		return exitRun
	}
	defer setup.close()
	root := path.Join(cfg.Root, fmt.Sprintf("cold-%s-%d", time.Now().UTC().Format("20060102T150405"), os.Getpid()))
	jobs := coldPlan(cfg, root)
	if err := makePaths(setup.conn, root, jobs); err != nil {
		fmt.Fprintln(stderr, "stress: cold: lock paths:", err)
		return exitRun
	}
	info := coldInfo{servers: servers, source: source, load0: loadAverage(), started: time.Now().UTC()}
	r := newColdRun(cfg, servers, stderr)
	r.run(ctx, jobs)
	info.load1 = loadAverage()
	if err := deleteTree(setup.conn, root); err != nil {
		fmt.Fprintln(stderr, "stress: cold: removing", root+":", err)
	}
	printCold(stdout, cfg, info, r.cells)
	return r.status()
}

// coldServers finds or starts the server: -zk, else $TIERLOCK_ZK_SERVERS,
// else a standalone one started here with tickTime -cold-tick.
func coldServers(ctx context.Context, cfg coldConfig, stderr io.Writer) ([]string, func(), string, error) {
	if len(cfg.ZK) == 0 {
		if _, ok := zkserver.FromEnv(); !ok {
			fmt.Fprintf(stderr, "stress: starting a local ZooKeeper, tickTime %v (use -zk or $%s for an existing one)\n", cfg.Tick, zkserver.EnvServers)
		}
	}
	servers, stop, source, err := zkserver.Resolve(ctx, strings.Join(cfg.ZK, ","), zkserver.WithTickTime(cfg.Tick))
	if err != nil {
		return nil, nil, "", fmt.Errorf("start ZooKeeper: %w", err)
	}
	if source == "started here" {
		source = fmt.Sprintf("started here, tickTime %v", cfg.Tick)
	}
	return servers, stop, source, nil
}

// coldPlan lays out the jobs: for each spell, longest first, -cold-n
// connections of each implementation, implementations interleaved, each
// starting -cold-stagger after the one before.
func coldPlan(cfg coldConfig, root string) []coldJob {
	var jobs []coldJob
	for s := len(cfg.Idle) - 1; s >= 0; s-- {
		for i := range cfg.N {
			for k, im := range cfg.Impls {
				dir := path.Join(root, string(im), spell(cfg.Idle[s]))
				jobs = append(jobs, coldJob{
					impl: k, spell: s, start: time.Duration(len(jobs)) * cfg.Stagger,
					first: path.Join(dir, fmt.Sprintf("%d-first", i)),
					cold:  path.Join(dir, fmt.Sprintf("%d-after", i)),
				})
			}
		}
	}
	return jobs
}

func newColdRun(cfg coldConfig, servers []string, stderr io.Writer) *coldRun {
	r := &coldRun{cfg: cfg, servers: servers, stderr: stderr, left: make([]atomic.Int64, len(cfg.Idle))}
	r.cells = make([][]coldCell, len(cfg.Impls))
	for k := range r.cells {
		r.cells[k] = make([]coldCell, 1+len(cfg.Idle))
	}
	return r
}

// run runs every job in a goroutine of its own and returns when all have
// ended: their connections closed, or ctx ended (an interrupt, or the
// run's own bound: the longest spell, the stagger and a few minutes).
func (r *coldRun) run(ctx context.Context, jobs []coldJob) {
	last := jobs[len(jobs)-1].start
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Idle[len(r.cfg.Idle)-1]+last+2*r.cfg.ConnectTimeout+3*time.Minute)
	defer cancel()
	for _, j := range jobs {
		r.left[j.spell].Add(1)
	}
	fmt.Fprintf(r.stderr, "stress: cold: %d connections (%d implementations x %d idle spells x %d), starting %v apart; the last Lock is due in about %v\n",
		len(jobs), len(r.cfg.Impls), len(r.cfg.Idle), r.cfg.N, r.cfg.Stagger,
		(r.cfg.Idle[len(r.cfg.Idle)-1] + time.Duration(len(r.cfg.Impls)*r.cfg.N)*r.cfg.Stagger).Round(time.Second))
	r.t0 = time.Now()
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(func() {
			r.job(ctx, j)
			if r.left[j.spell].Add(-1) == 0 && ctx.Err() == nil {
				// Spells can end together; stderr may be a bytes.Buffer.
				r.mu.Lock()
				fmt.Fprintf(r.stderr, "stress: cold: after %s idle: done (%.0fs)\n", spell(r.cfg.Idle[j.spell]), time.Since(r.t0).Seconds())
				r.mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// job is one connection: connect, a first Lock, the idle spell, a Lock
// after it. A failure before the second Lock counts against its row too.
func (r *coldRun) job(ctx context.Context, j coldJob) {
	row := j.spell + 1
	if !sleepCtx(ctx, time.Until(r.t0.Add(j.start))) {
		return
	}
	c, err := r.dial(ctx, j.impl)
	if err != nil {
		if ctx.Err() == nil {
			r.record(j.impl, 0, 0, err)
			r.record(j.impl, row, 0, errors.New("no connection"))
		}
		return
	}
	// zk.Lock's Lock cannot be cancelled: closing the connection ends it.
	stop := context.AfterFunc(ctx, c.close)
	defer func() {
		stop()
		c.close()
	}()
	if !r.timed(ctx, c, j.impl, 0, j.first) {
		if ctx.Err() == nil {
			r.record(j.impl, row, 0, errors.New("the first Lock failed"))
		}
		return
	}
	if !sleepCtx(ctx, r.cfg.Idle[j.spell]) {
		return
	}
	r.timed(ctx, c, j.impl, row, j.cold)
}

// timed takes and releases the lock at p through c, records how long the
// making of the handle and Lock took, and reports whether all went well.
func (r *coldRun) timed(ctx context.Context, c coldClient, impl, row int, p string) bool {
	t0 := time.Now()
	release, err := c.lock(ctx, p)
	d := time.Since(t0)
	if err != nil {
		if ctx.Err() == nil {
			r.record(impl, row, 0, fmt.Errorf("Lock %s: %w", p, err))
		}
		return false
	}
	if err := release(); err != nil {
		r.record(impl, row, d, fmt.Errorf("Unlock %s: %w", p, err))
		return false
	}
	r.record(impl, row, d, nil)
	return true
}

// dial connects as implementation k does.
func (r *coldRun) dial(ctx context.Context, k int) (coldClient, error) {
	switch r.cfg.Impls[k] {
	case proto.Tier:
		return dialTier(ctx, r.servers, r.cfg)
	case proto.Zkcompat:
		return dialConn(ctx, r.servers, r.cfg, true)
	}
	return dialConn(ctx, r.servers, r.cfg, false)
}

// record adds to a cell a Lock's latency (d > 0), a failed Lock (d == 0,
// err), or a Lock whose release failed (d > 0, err).
func (r *coldRun) record(impl, row int, d time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &r.cells[impl][row]
	switch {
	case d > 0:
		c.lat = append(c.lat, d)
		if err != nil {
			c.unlocked++
		}
	case err != nil:
		c.failed++
	}
	if err != nil && len(c.errs) < 3 {
		c.errs = append(c.errs, err.Error())
	}
}

// status is the exit status, and says how many Locks were not measured:
// a run cut short (exitRun) before a failure (exitViolation).
func (r *coldRun) status() int {
	failed, missing := false, 0
	for _, cells := range r.cells {
		for row, c := range cells {
			want := r.cfg.N
			if row == 0 {
				want *= len(r.cfg.Idle)
			}
			failed = failed || c.failed+c.unlocked > 0
			missing += want - len(c.lat) - c.failed
		}
	}
	switch {
	case missing > 0:
		fmt.Fprintf(r.stderr, "stress: cold: %d Locks not measured (interrupted, or past the run's time bound)\n", missing)
		return exitRun
	case failed:
		return exitViolation
	}
	return exitOK
}

// sleepCtx sleeps for d unless ctx ends first; it reports whether it slept.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(max(d, 0))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// makePaths creates root, its parents and every job's lock paths,
// persistent and empty, in multis of at most 256 creates.
func makePaths(conn *zk.Conn, root string, jobs []coldJob) error {
	var parents []string
	for p := path.Dir(root); p != "/"; p = path.Dir(p) {
		parents = append([]string{p}, parents...)
	}
	for _, p := range parents {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	var ops []any
	made := map[string]bool{}
	add := func(p string) {
		if !made[p] {
			made[p] = true
			ops = append(ops, &zk.CreateRequest{Path: p, Acl: zk.WorldACL(zk.PermAll)})
		}
	}
	add(root)
	for _, j := range jobs {
		dir := path.Dir(j.first)
		add(path.Dir(dir))
		add(dir)
		add(j.first)
		add(j.cold)
	}
	return multis(conn, ops)
}

// deleteTree deletes p and everything under it, deepest first.
func deleteTree(conn *zk.Conn, p string) error {
	var ops []any
	var walk func(string) error
	walk = func(p string) error {
		children, _, err := conn.Children(p)
		if err != nil {
			return err
		}
		for _, c := range children {
			if err := walk(path.Join(p, c)); err != nil {
				return err
			}
		}
		ops = append(ops, &zk.DeleteRequest{Path: p, Version: -1})
		return nil
	}
	if err := walk(p); err != nil {
		return err
	}
	return multis(conn, ops)
}

// multis sends ops in order, in multis of at most 256.
func multis(conn *zk.Conn, ops []any) error {
	for len(ops) > 0 {
		n := min(len(ops), 256)
		if _, err := conn.Multi(ops[:n]...); err != nil {
			return err
		}
		ops = ops[n:]
	}
	return nil
}
