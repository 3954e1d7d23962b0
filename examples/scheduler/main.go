// Command scheduler is a job scheduler spread over several processes, each
// with many worker goroutines, that uses one tierlock lock per job so that
// no job ever runs twice at the same time, and shows what that costs on
// ZooKeeper.
//
// The program starts -procs worker processes (it re-executes itself). Each
// runs -workers goroutines for -duration. A worker goroutine picks one of
// -jobs job ids at random, takes the job's lock, <root>/job-<id>, from a
// tier.Registry, runs the job (-work of sleeping) and releases the lock;
// then it picks again. Every job run appends a "start" and an "end" record,
// with its job, process id and fencing token, to one shared file opened with
// O_APPEND: the kernel orders appends, so the file is one timeline across
// processes. When the workers are done the parent reads it and checks that
// no two runs of one job overlap and that each job's fencing tokens only
// grew. Meanwhile it counts, over a separate ZooKeeper connection, the lock
// nodes under the root, and compares the peak with what locks per goroutine
// (one zk.Lock each, the usual way) would put there.
//
//	go run ./examples/scheduler                   # starts a local ZooKeeper
//	go run ./examples/scheduler -zk 127.0.0.1:2181 -procs 4 -jobs 16
//
// # Policy: try, or skip to another job
//
// With -policy try (the default) a worker uses TryAcquire and, if the job is
// running elsewhere, skips it and picks another at once. That suits a
// scheduler whose jobs need to run, not to run once per worker that picked
// them: a job already running has nobody waiting for a second run, and the
// worker's time is better spent on another job. TryAcquire never waits:
// when a goroutine of the same process runs the job it fails at the
// process's gate without any ZooKeeper request, and when another process
// runs it, it costs one create, listing and delete, and no watch.
//
// With -policy wait a worker uses Acquire and waits its turn, then runs the
// job again: right when every request must be served in order (a queue per
// key), wasteful for jobs that only need to be run. The waits show the
// tiers at work: the goroutines of a process that want one job queue at its
// gate, and only one node per process and job waits on ZooKeeper, where
// locks per goroutine would queue a node and a watch for each goroutine.
//
// Either way a process has at most one node per job on ZooKeeper, so the
// saving over locks per goroutine grows with the number of goroutines that
// want the same job: try -jobs 8.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// workerEnv, set to "1", makes the program a worker process. The parent
// sets it when it re-executes itself.
const workerEnv = "TIERLOCK_SCHEDULER_WORKER"

// How a worker process talks to its parent: it prints readyMsg on stdout
// once connected, waits for goMsg on stdin, and prints a doneMsg line
// with its counts at the end. End of stdin means the parent is gone.
const (
	readyMsg = "ready"
	goMsg    = "go"
	doneMsg  = "done runs=%d skipped=%d lost=%d errors=%d"
)

// sampleEvery is how often the parent counts the lock nodes.
const sampleEvery = 100 * time.Millisecond

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var err error
	if os.Getenv(workerEnv) == "1" {
		err = runWorker(ctx, os.Args[1:], os.Stdin, os.Stdout)
	} else {
		err = run(ctx, os.Args[1:], os.Stdout)
	}
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0) // -h: the flag package printed the usage
	case err != nil:
		fmt.Fprintln(os.Stderr, "scheduler:", err)
		os.Exit(1)
	}
}

type config struct {
	zk       string
	procs    int
	workers  int
	jobs     int
	duration time.Duration
	work     time.Duration
	policy   string
	root     string
	records  string
	verbose  bool
}

// parseFlags reads the flags; parent and workers share them (the parent
// passes its own on, with -records set).
func parseFlags(name string, args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&c.zk, "zk", "", "ZooKeeper servers, host:port,... (default: $"+zkserver.EnvServers+", else start one)")
	fs.IntVar(&c.procs, "procs", 3, "worker processes")
	fs.IntVar(&c.workers, "workers", 32, "worker goroutines per process")
	fs.IntVar(&c.jobs, "jobs", 200, "job ids, shared by all processes")
	fs.DurationVar(&c.duration, "duration", 5*time.Second, "how long the workers pick jobs")
	fs.DurationVar(&c.work, "work", 20*time.Millisecond, "how long one job run takes")
	fs.StringVar(&c.policy, "policy", "try", "try: skip a job that is running elsewhere; wait: wait for it")
	fs.StringVar(&c.root, "root", "", "lock root (default /tierlock-examples/scheduler-<pid>)")
	fs.StringVar(&c.records, "records", "", "file of job-run records (default: a temporary file)")
	fs.BoolVar(&c.verbose, "v", false, "show the library's info logs on stderr (warnings always)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case c.procs < 1 || c.workers < 1 || c.jobs < 1:
		return c, errors.New("-procs, -workers and -jobs must be at least 1")
	case c.duration <= 0 || c.work < 0:
		return c, errors.New("-duration must be positive and -work not negative")
	case c.policy != "try" && c.policy != "wait":
		return c, fmt.Errorf("-policy %q: want try or wait", c.policy)
	}
	return c, nil
}

func (c config) args() []string {
	return []string{
		"-zk", c.zk, "-root", c.root, "-records", c.records, "-policy", c.policy,
		"-procs", strconv.Itoa(c.procs), "-workers", strconv.Itoa(c.workers), "-jobs", strconv.Itoa(c.jobs),
		"-duration", c.duration.String(), "-work", c.work.String(), "-v=" + strconv.FormatBool(c.verbose),
	}
}

func (c config) logger() *slog.Logger {
	level := slog.LevelWarn
	if c.verbose {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// run is the parent: it starts the workers, watches ZooKeeper, checks the
// records and reports.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := parseFlags("scheduler", args)
	if err != nil {
		return err
	}
	say := func(format string, a ...any) { fmt.Fprintf(stdout, format+"\n", a...) }

	servers, stopZK, err := zookeeper(ctx, cfg.zk, say)
	if err != nil {
		return err
	}
	defer stopZK()
	cfg.zk = strings.Join(servers, ",")
	if cfg.root == "" {
		cfg.root = fmt.Sprintf("/tierlock-examples/scheduler-%d", os.Getpid())
	}
	if err := zklock.ValidatePath(cfg.root); err != nil {
		return err
	}
	if cfg.records == "" {
		dir, err := os.MkdirTemp("", "tierlock-scheduler-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.records = filepath.Join(dir, "runs.log")
	}
	if err := os.WriteFile(cfg.records, nil, 0o644); err != nil {
		return err
	}

	policy := "try (TryAcquire; skip a job running elsewhere)"
	if cfg.policy == "wait" {
		policy = "wait (Acquire; wait for a job running elsewhere)"
	}
	say("scheduler: %d processes × %d worker goroutines, %d jobs, %v, %v per job run",
		cfg.procs, cfg.workers, cfg.jobs, cfg.duration, cfg.work)
	say("policy: %s", policy)
	say("locks: %s/job-<id>, one per job, from a tier.Registry in each process", cfg.root)

	// The parent's own connection, for counting lock nodes.
	s, err := zklock.Connect(ctx, servers, zklock.WithLogger(cfg.logger()))
	if err != nil {
		return err
	}
	defer s.Close()

	// Start the workers and wait until all are connected, so that they
	// start together.
	ctx, cancel := context.WithTimeout(ctx, cfg.duration+60*time.Second)
	defer cancel()
	procs, err := startWorkers(ctx, cfg)
	defer func() {
		cancel() // kills the workers still running, after an early return
		for _, p := range procs {
			p.wait()
		}
	}()
	if err != nil {
		return err
	}
	pids := make([]string, len(procs))
	for i, p := range procs {
		pids[i] = strconv.Itoa(p.cmd.Process.Pid)
	}
	say("started %d worker processes (pids %s); all connected, go", len(procs), strings.Join(pids, ", "))

	// Go, and count the lock nodes while they work.
	sampleCtx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan nodeSamples, 1)
	go func() { sampled <- sampleNodes(sampleCtx, s.Conn(), cfg.root) }()
	start := time.Now()
	for _, p := range procs {
		if _, err := io.WriteString(p.stdin, goMsg+"\n"); err != nil {
			stopSampling()
			<-sampled
			return fmt.Errorf("worker %d: %w", p.cmd.Process.Pid, err)
		}
	}
	var total workerStats
	var failed error
	for _, p := range procs {
		if err := p.wait(); err != nil {
			failed = errors.Join(failed, err)
			continue
		}
		st := p.stats
		say("  pid %d: %d job runs, %d skipped (job busy), %d lost locks, %d errors",
			p.cmd.Process.Pid, st.runs, st.skipped, st.lost, st.errors)
		total.add(st)
	}
	elapsed := time.Since(start)
	stopSampling()
	nodes := <-sampled
	if failed != nil {
		return failed
	}

	// Check the timeline the workers wrote.
	f, err := os.Open(cfg.records)
	if err != nil {
		return err
	}
	res, err := checkRuns(f)
	f.Close()
	if err != nil {
		return err
	}
	say("records: %d job runs of %d distinct jobs checked: %d overlaps, %d fencing-token regressions, %d unfinished, %d malformed",
		res.runs, res.jobs, res.overlaps, res.regressions, res.unfinished, res.malformed)

	perGoroutine := cfg.workers * cfg.procs
	bound := cfg.procs * min(cfg.jobs, cfg.workers)
	say("lock znodes under the root, counted every %v by the parent over its own connection (%d samples):",
		sampleEvery, nodes.samples)
	say("  total: peak %d, mean %.1f; most on one job's path: %d (%d processes)",
		nodes.peak, nodes.mean(), nodes.perJob, cfg.procs)
	say("  locks per goroutine (one zk.Lock each) need one per goroutine waiting or holding: up to %d workers × %d processes = %d",
		cfg.workers, cfg.procs, perGoroutine)
	say("  tierlock needs at most one per process and job: %d processes × min(%d jobs, %d workers) = %d",
		cfg.procs, cfg.jobs, cfg.workers, bound)
	if cfg.jobs >= cfg.workers {
		say("  (with more jobs than workers, goroutines of a process rarely want the same job, so the two")
		say("  are close; the saving grows as goroutines share jobs: try -jobs 8 -policy wait)")
	}
	say("  (a sample is many reads, up to %v apart, not one snapshot, and a release's delete goes out",
		nodes.span.Round(time.Millisecond))
	say("  after Release returns: a total can exceed the bound a little)")

	verdict := "no job ever ran twice at once"
	switch {
	case res.overlaps > 0:
		verdict = "MUTUAL EXCLUSION VIOLATED"
	case res.regressions > 0:
		verdict = "no overlap, but fencing tokens did not always grow"
	}
	say("summary: %d job runs (%.0f/s) by %d goroutines in %d processes; %s (%d overlaps);",
		res.runs, float64(res.runs)/elapsed.Seconds(), perGoroutine, cfg.procs, verdict, res.overlaps)
	say("  peak %d lock znodes on ZooKeeper (bound %d), where locks per goroutine would put up to %d",
		nodes.peak, bound, perGoroutine)

	switch {
	case res.overlaps > 0 || res.regressions > 0:
		return fmt.Errorf("%d overlapping runs, %d token regressions", res.overlaps, res.regressions)
	case res.runs != total.runs || res.unfinished > 0 || res.malformed > 0:
		return fmt.Errorf("records disagree with the workers: %d runs recorded, %d reported, %d unfinished, %d malformed",
			res.runs, total.runs, res.unfinished, res.malformed)
	case total.errors > 0:
		return fmt.Errorf("%d lock errors in the workers (see their logs above)", total.errors)
	}
	return nil
}

// workerStats are a worker process's counts, from its doneMsg line.
type workerStats struct{ runs, skipped, lost, errors int }

func (s *workerStats) add(o workerStats) {
	s.runs += o.runs
	s.skipped += o.skipped
	s.lost += o.lost
	s.errors += o.errors
}

// proc is a worker process seen from the parent.
type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	ready chan struct{} // closed when it printed readyMsg
	eof   chan struct{} // closed when its stdout ended
	stats workerStats   // valid after eof
	gotIt bool          // a doneMsg line was read

	once    sync.Once
	waitErr error
}

// startWorkers re-executes this program as cfg.procs worker processes and
// waits until each is connected. It returns the processes it started, also
// with an error.
func startWorkers(ctx context.Context, cfg config) ([]*proc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var procs []*proc
	for range cfg.procs {
		cmd := exec.CommandContext(ctx, exe, cfg.args()...)
		cmd.Env = append(os.Environ(), workerEnv+"=1")
		cmd.Stderr = os.Stderr // the workers' warnings, if any
		cmd.WaitDelay = 5 * time.Second
		p := &proc{cmd: cmd, ready: make(chan struct{}), eof: make(chan struct{})}
		if p.stdin, err = cmd.StdinPipe(); err != nil {
			return procs, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return procs, err
		}
		if err := cmd.Start(); err != nil {
			return procs, err
		}
		procs = append(procs, p)
		go p.read(out)
	}
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for _, p := range procs {
		select {
		case <-p.ready:
		case <-p.eof:
			return procs, fmt.Errorf("worker %d exited before it was ready: %v", p.cmd.Process.Pid, p.wait())
		case <-timeout.C:
			return procs, fmt.Errorf("worker %d not ready after 30s", p.cmd.Process.Pid)
		case <-ctx.Done():
			return procs, ctx.Err()
		}
	}
	return procs, nil
}

// read follows the worker's stdout until it ends.
func (p *proc) read(out io.Reader) {
	defer close(p.eof)
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		var st workerStats
		switch {
		case line == readyMsg:
			close(p.ready)
		case strings.HasPrefix(line, "done "):
			if _, err := fmt.Sscanf(line, doneMsg, &st.runs, &st.skipped, &st.lost, &st.errors); err == nil {
				p.stats, p.gotIt = st, true
			}
		}
	}
}

// wait waits for the worker to exit (once; later calls return the same).
func (p *proc) wait() error {
	p.once.Do(func() {
		<-p.eof
		err := p.cmd.Wait()
		switch {
		case err != nil:
			p.waitErr = fmt.Errorf("worker %d: %w", p.cmd.Process.Pid, err)
		case !p.gotIt:
			p.waitErr = fmt.Errorf("worker %d exited without its counts", p.cmd.Process.Pid)
		}
	})
	return p.waitErr
}

// runWorker is a worker process: -workers goroutines running random jobs
// under the registry's locks for -duration.
func runWorker(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	cfg, err := parseFlags("scheduler worker", args)
	if err != nil {
		return err
	}
	if cfg.records == "" || cfg.zk == "" || cfg.root == "" {
		return errors.New("a worker needs -zk, -root and -records (the parent sets them)")
	}
	log := cfg.logger().With("pid", os.Getpid())

	// One session per process, shared by all its locks.
	s, err := zklock.Connect(ctx, strings.Split(cfg.zk, ","), zklock.WithLogger(log))
	if err != nil {
		return err
	}
	defer s.Close()
	// The registry hands every goroutine asking for one key the same
	// tier.Lock, whose gate keeps the process to one ZooKeeper node per job.
	reg, err := tier.NewRegistry(s, cfg.root, tier.WithLogger(log))
	if err != nil {
		return err
	}
	defer reg.Close()
	f, err := os.OpenFile(cfg.records, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()

	// Tell the parent we are ready and wait for its go. The end of stdin
	// means the parent is gone: stop.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	begin := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdin)
		begin <- sc.Scan() && sc.Text() == goMsg
		for sc.Scan() {
		}
		cancel()
	}()
	fmt.Fprintln(stdout, readyMsg)
	select {
	case ok := <-begin:
		if !ok {
			return errors.New("no go from the parent")
		}
	case <-ctx.Done():
		return ctx.Err()
	}

	runCtx, stop := context.WithTimeout(ctx, cfg.duration)
	defer stop()
	w := &worker{cfg: cfg, reg: reg, records: f, pid: os.Getpid(), log: log}
	var wg sync.WaitGroup
	for range cfg.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(runCtx)
		}()
	}
	wg.Wait()
	fmt.Fprintf(stdout, doneMsg+"\n", w.runs.Load(), w.skipped.Load(), w.lost.Load(), w.errors.Load())
	return nil
}

// worker is what a worker process's goroutines share.
type worker struct {
	cfg     config
	reg     *tier.Registry
	records *os.File
	pid     int
	log     *slog.Logger

	runs, skipped, lost, errors atomic.Int64
}

// loop picks random jobs and runs them until ctx ends.
func (w *worker) loop(ctx context.Context) {
	var pause time.Duration // after a skip: none at first, then growing
	for ctx.Err() == nil {
		key := "job-" + strconv.Itoa(rand.IntN(w.cfg.jobs))
		// The registry keeps a key's lock while it is acquired or held.
		var held context.Context
		var err error
		ok := true
		if w.cfg.policy == "try" {
			held, ok, err = w.reg.TryAcquire(ctx, key)
		} else {
			held, err = w.reg.Acquire(ctx, key)
		}
		switch {
		case err != nil && ctx.Err() != nil:
			return // time is up
		case err != nil:
			w.fail(key, err)
			sleep(ctx, 10*time.Millisecond)
			continue
		case !ok:
			// Running elsewhere: pick another job, at once the first time.
			// When skips follow each other most jobs are busy: pause, longer
			// each time (up to one job run), rather than spin.
			w.skipped.Add(1)
			sleep(ctx, pause)
			pause = min(max(2*pause, 100*time.Microsecond), max(w.cfg.work, time.Millisecond))
			continue
		}
		pause = 0
		w.runJob(held, key)
	}
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// runJob runs one job under the hold held carries and releases it.
func (w *worker) runJob(held context.Context, key string) {
	token, err := w.reg.Token(held)
	if err != nil {
		w.fail(key, err)
	}
	// One write per record, to a file opened with O_APPEND: records of
	// different processes never interleave, and their order in the file is
	// the order in which they were written.
	if _, err := fmt.Fprintf(w.records, "start %s %d %d\n", key, w.pid, token); err != nil {
		w.fail(key, err)
	}
	// The job's work. A real job would stop its work when held.Done()
	// fires (the lock was lost: session expired or disconnected, node
	// deleted) and pass the token to whatever it writes.
	t := time.NewTimer(w.cfg.work)
	select {
	case <-t.C:
	case <-held.Done():
		t.Stop()
		w.lost.Add(1)
	}
	if _, err := fmt.Fprintf(w.records, "end %s %d %d\n", key, w.pid, token); err != nil {
		w.fail(key, err)
	}
	w.runs.Add(1)
	if err := w.reg.Release(held); err != nil && !errors.Is(err, tier.ErrLockLost) {
		w.fail(key, err)
	}
}

func (w *worker) fail(key string, err error) {
	w.errors.Add(1)
	w.log.Error("job lock", "job", key, "err", err)
}

// nodeSamples is what sampleNodes saw.
type nodeSamples struct {
	samples int
	peak    int           // most lock nodes in one sample
	sum     int           // of all samples, for the mean
	perJob  int           // most lock nodes on one job's path in one read
	span    time.Duration // longest time one sample took
}

func (n nodeSamples) mean() float64 {
	if n.samples == 0 {
		return 0
	}
	return float64(n.sum) / float64(n.samples)
}

// sampleNodes counts, every sampleEvery until ctx ends, the lock nodes in
// all the job directories under root. It reads the directories all at
// once: the requests are pipelined on the connection, so a sample takes
// about one round trip. A sample is not one snapshot, though: a worker
// that ends one run and begins another while it is taken can be counted
// twice.
func sampleNodes(ctx context.Context, conn *zk.Conn, root string) nodeSamples {
	var out nodeSamples
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return out
		case <-tick.C:
		}
		begin := time.Now()
		dirs, _, err := conn.Children(root)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			continue // a missed sample; the connection will come back
		}
		counts := make([]int32, len(dirs))
		var wg sync.WaitGroup
		for i, d := range dirs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A job directory holds only lock nodes: its stat's child
				// count is the number of lock nodes.
				if ok, st, err := conn.Exists(root + "/" + d); err == nil && ok {
					counts[i] = st.NumChildren
				}
			}()
		}
		wg.Wait()
		n := 0
		for _, c := range counts {
			n += int(c)
			out.perJob = max(out.perJob, int(c))
		}
		out.samples++
		out.sum += n
		out.peak = max(out.peak, n)
		out.span = max(out.span, time.Since(begin))
	}
}

// checkResult is what checkRuns found.
type checkResult struct {
	runs        int // start records
	jobs        int // distinct jobs run
	overlaps    int // starts of a job while another run of it was open
	regressions int // starts whose token was not above the job's last one
	unfinished  int // starts without their end
	malformed   int // lines that are not a record, or an end without start
}

// checkRuns reads the records ("start|end <job> <pid> <token>", in the order
// written) and checks that no two runs of one job overlap and that each
// job's fencing tokens increase from run to run.
func checkRuns(r io.Reader) (checkResult, error) {
	type runID struct {
		pid   int
		token int64
	}
	var res checkResult
	open := make(map[string][]runID) // runs of each job started, not ended
	last := make(map[string]int64)   // each job's last token
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var kind, job string
		var id runID
		if n, err := fmt.Sscanf(sc.Text(), "%s %s %d %d", &kind, &job, &id.pid, &id.token); err != nil || n != 4 {
			res.malformed++
			continue
		}
		switch kind {
		case "start":
			res.runs++
			if len(open[job]) > 0 {
				res.overlaps++
			}
			if t, seen := last[job]; seen && id.token <= t {
				res.regressions++
			}
			last[job] = id.token
			open[job] = append(open[job], id)
		case "end":
			i := slices.Index(open[job], id)
			if i < 0 {
				res.malformed++
				continue
			}
			open[job] = slices.Delete(open[job], i, i+1)
		default:
			res.malformed++
		}
	}
	for _, o := range open {
		res.unfinished += len(o)
	}
	res.jobs = len(last)
	return res, sc.Err()
}

// zookeeper returns the servers to use (see zkserver.Resolve) and says
// where they came from.
func zookeeper(ctx context.Context, flagValue string, say func(string, ...any)) ([]string, func(), error) {
	if flagValue == "" && os.Getenv(zkserver.EnvServers) == "" {
		say("ZooKeeper: none given (-zk or %s); starting a local server...", zkserver.EnvServers)
	}
	servers, stop, source, err := zkserver.Resolve(ctx, flagValue)
	if err != nil {
		return nil, nil, err
	}
	say("ZooKeeper: %s (%s)", strings.Join(servers, ","), source)
	return servers, stop, nil
}
