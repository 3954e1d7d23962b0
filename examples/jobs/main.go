// Command jobs is a small job scheduler on tierlock, the example to read
// after basic. Worker goroutines pick jobs by key; each job has its own
// lock, from a tier.Registry, so no job runs twice at once, in this
// process or any other. A worker either tries a job and skips it when it is
// busy (TryAcquire) or waits for it with a deadline (Acquire -wait); it
// watches held.Done() while it works, and gives the lock's fencing token to
// the job store with every write, so that a holder that lost its lock
// without noticing cannot overwrite a later holder's work.
//
// Start a ZooKeeper (scripts/zk.sh start serves one on 127.0.0.1:2181, the
// default of -zk), then run it in two or three terminals against the same
// server:
//
//	go run ./examples/jobs            # try, skip busy jobs
//	go run ./examples/jobs -wait 2s   # wait up to 2s per job
//
// The -duration clock starts before connecting: with no server there, it
// says so within -duration or zklock.ConnectTimeout (10s), whichever is
// shorter, and exits 1.
//
// What the scheduler example it replaces measured (znodes on ZooKeeper
// against one lock per goroutine), the stress command measures: go run -C stress ..
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, newStore()); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "jobs:", err)
		os.Exit(1)
	}
}

// scheduler is what the workers of one process share.
type scheduler struct {
	reg        *tier.Registry
	store      *store
	jobs       int
	wait, work time.Duration // wait 0: TryAcquire and skip; else Acquire's deadline
	out        io.Writer
	mu         sync.Mutex     // guards counts and out
	counts     map[string]int // outcome -> how often
}

// run is the program; main and the tests call it. Runs that share st stand
// in for processes that write to one database.
func run(ctx context.Context, args []string, out io.Writer, st *store) error {
	fs := flag.NewFlagSet("jobs", flag.ContinueOnError)
	zk := fs.String("zk", defaultServers(), "ZooKeeper servers, host:port,... ($TIERLOCK_ZK_SERVERS, else 127.0.0.1:2181)")
	root := fs.String("root", "/tierlock-examples/jobs", "lock root: job k's lock is <root>/job-k")
	workers := fs.Int("workers", 8, "worker goroutines")
	sch := &scheduler{store: st, out: out, counts: map[string]int{}}
	fs.IntVar(&sch.jobs, "jobs", 4, "job keys, the same in every process")
	fs.DurationVar(&sch.wait, "wait", 0, "0: skip a busy job (TryAcquire); else wait up to this long (Acquire)")
	fs.DurationVar(&sch.work, "work", 300*time.Millisecond, "how long one job run takes")
	duration := fs.Duration("duration", 15*time.Second, "how long to run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	servers := strings.TrimSpace(*zk)
	if strings.Trim(servers, ", ") == "" {
		return errors.New("no ZooKeeper given: use -zk host:port[,host:port...] or set TIERLOCK_ZK_SERVERS")
	}
	if *workers < 1 || sch.jobs < 1 || sch.work <= 0 || sch.wait < 0 {
		return errors.New("-workers and -jobs must be at least 1, -work positive, -wait not negative")
	}
	// The run's clock starts now: connecting counts against -duration.
	ctx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()
	// One session per process, shared by every lock of the process.
	s, err := connect(ctx, servers)
	if err != nil {
		return err
	}
	defer s.Close()
	if sch.reg, err = tier.NewRegistry(s, *root); err != nil {
		return err
	}
	defer sch.reg.Close()

	fmt.Fprintf(out, "pid %d: %d workers, %d jobs under %s\n", os.Getpid(), *workers, sch.jobs, *root)
	var wg sync.WaitGroup
	for id := range *workers {
		wg.Go(func() { sch.worker(ctx, id) })
	}
	wg.Wait()
	fmt.Fprintf(out, "pid %d: outcomes %v\n", os.Getpid(), sch.counts)
	if n := sch.counts["refused"] + sch.counts["failed"]; n > 0 {
		return fmt.Errorf("%d job runs refused or failed", n)
	}
	return nil
}

// defaultServers is -zk's default: $TIERLOCK_ZK_SERVERS, else a server on
// this machine's port 2181 (scripts/zk.sh start serves one there).
func defaultServers() string {
	return cmp.Or(os.Getenv("TIERLOCK_ZK_SERVERS"), "127.0.0.1:2181")
}

// connect opens the process's session, giving up after
// zklock.ConnectTimeout, or when ctx ends if that is sooner (the end of
// -duration), with an error that says where it looked, for how long, and
// the last dial error (such as "connection refused").
func connect(ctx context.Context, servers string) (*zklock.Session, error) {
	cctx, cancel := context.WithTimeout(ctx, zklock.ConnectTimeout)
	defer cancel()
	deadline, _ := cctx.Deadline()
	bound := time.Until(deadline).Round(100 * time.Millisecond)
	s, err := zklock.Connect(cctx, strings.Split(servers, ","))
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("no ZooKeeper reachable at %s within %v (start one with scripts/zk.sh start, or give -zk host:port): %w",
			servers, bound, err)
	}
	return s, err
}

// worker runs random jobs until ctx ends, counting what happened.
func (sch *scheduler) worker(ctx context.Context, id int) {
	for ctx.Err() == nil {
		outcome := sch.runJob(ctx, id, fmt.Sprintf("job-%d", rand.IntN(sch.jobs)))
		sch.mu.Lock()
		sch.counts[outcome]++
		sch.mu.Unlock()
		if outcome != "ran" { // most jobs are busy: don't spin
			select {
			case <-ctx.Done():
			case <-time.After(sch.work / 4):
			}
		}
	}
}

// runJob runs job key if it gets the job's lock, and says what happened.
func (sch *scheduler) runJob(ctx context.Context, id int, key string) string {
	// The registry keeps the job's lock while someone acquires or holds it.
	var held context.Context
	var err error
	if sch.wait == 0 {
		// Try and skip. false means a worker of this process holds the job
		// (the gate says so, no ZooKeeper request) or another process does.
		var ok bool
		if held, ok, err = sch.reg.TryAcquire(ctx, key); err == nil && !ok {
			return "skipped"
		}
	} else {
		// Wait, but not for ever. wctx bounds the wait only: the hold that
		// Acquire returns does not end with it.
		wctx, cancel := context.WithTimeout(ctx, sch.wait)
		held, err = sch.reg.Acquire(wctx, key)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return "timed out"
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return "stopped"
		}
		return sch.fail(key, err)
	}
	outcome := sch.do(held, id, key)
	// Release the node first, then the gate. After a loss it returns an
	// error wrapping tier.ErrLockLost, which do has reported already.
	if err := sch.reg.Release(held); err != nil && !errors.Is(err, tier.ErrLockLost) {
		return sch.fail(key, err)
	}
	return outcome
}

// do is the job: three steps of work, each followed by a write to the
// store with the hold's fencing token, stopping as soon as the hold ends.
func (sch *scheduler) do(held context.Context, id int, key string) string {
	token, err := sch.reg.Token(held)
	if err != nil {
		return sch.fail(key, err)
	}
	for step := 1; step <= 3; step++ {
		select {
		case <-held.Done(): // the hold ended: stop writing at once
			sch.say("%s: worker %d lost the lock: %v\n", key, id, context.Cause(held))
			return "lost"
		case <-time.After(sch.work / 3): // a step of work, then its write
		}
		if err := sch.store.Write(key, token); err != nil {
			return sch.fail(key, err)
		}
	}
	sch.say("%s: worker %d ran it, fencing token %d\n", key, id, token)
	return "ran"
}

// say writes a line for a worker; mu keeps the workers' lines whole.
func (sch *scheduler) say(format string, a ...any) {
	sch.mu.Lock()
	defer sch.mu.Unlock()
	fmt.Fprintf(sch.out, format, a...)
}

func (sch *scheduler) fail(key string, err error) string {
	sch.say("%s: %v\n", key, err)
	if errors.Is(err, errStale) {
		return "refused"
	}
	return "failed"
}

// errStale is the store's refusal of a write with a stale fencing token.
var errStale = errors.New("store: stale fencing token")

// store stands in for what the locks protect (a database, a bucket, an
// API). It keeps the highest fencing token it has seen per job and refuses
// writes with a lower one: that writer's hold has ended (its session
// expired while it was paused, say) and a later holder may have written.
// Equal tokens are legal: a holder writes several times, and with
// tier.WithHandoff consecutive holders in one process share one ZooKeeper
// node and so one token (the gate passes the hold on; they never overlap).
// A real resource checks and writes atomically, as here under mu.
type store struct {
	mu      sync.Mutex
	highest map[string]int64
}

func newStore() *store { return &store{highest: map[string]int64{}} }

// Write records a write to job key with token, unless token is stale.
func (s *store) Write(key string, token int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest[key] {
		return fmt.Errorf("%w: %s: token %d, but %d has written", errStale, key, token, s.highest[key])
	}
	s.highest[key] = token
	return nil
}
