// Command quickstart runs three jobs, each under its own lock, so that
// however many copies of it run, each job runs in one process at a time.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// sessionTimeout is the session timeout asked of ZooKeeper: a copy of this
// program killed while it holds a job keeps the job's lock until its
// session expires, about this long after it last spoke to the server.
const sessionTimeout = 10 * time.Second

// jobWait is how long a job waits for its lock: longer than a session
// timeout, so that a killed copy's job passes on to this one rather than
// the wait ending just before.
const jobWait = 2 * sessionTimeout

func main() {
	servers := flag.String("zk", "127.0.0.1:2181", "ZooKeeper servers, host:port,...")
	flag.Parse()
	// Ctrl-C ends the program cleanly, with status 0: the job in hand
	// stops, its hold is released and the session closed.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, strings.Split(*servers, ",")); err != nil && ctx.Err() == nil {
		log.Fatal(err)
	}
}

// run connects to servers and runs the jobs one after the other; it
// returns the first error, or ctx's once it ends.
func run(ctx context.Context, servers []string) error {
	// One session per process. Without a deadline Connect gives up after
	// zklock.ConnectTimeout; here after 5 s.
	dial, cancel := context.WithTimeout(ctx, 5*time.Second)
	s, err := zklock.Connect(dial, servers, zklock.WithSessionTimeout(sessionTimeout))
	cancel()
	if err != nil {
		return fmt.Errorf("%w (is ZooKeeper running? scripts/zk.sh start starts one)", err)
	}
	defer s.Close()
	// One lock per job below a root, shared by every goroutine of the
	// process: one ZooKeeper node per job this process runs or waits for.
	jobs, err := tier.NewRegistry(s, "/quickstart/jobs")
	if err != nil {
		return err
	}
	defer jobs.Close()
	for _, job := range []string{"invoices", "reports", "cleanup"} {
		if err := runJob(ctx, jobs, job); err != nil {
			return err
		}
	}
	return nil
}

// runJob waits up to jobWait for job's lock, then does the job while it
// holds it.
func runJob(ctx context.Context, jobs *tier.Registry, job string) error {
	wait, cancel := context.WithTimeout(ctx, jobWait)
	defer cancel()
	held, err := jobs.Acquire(wait, job)
	if err != nil {
		return fmt.Errorf("%s: %w", job, err)
	}
	defer jobs.Release(held)
	// The fencing token grows with every holder: send it with every write
	// to the resource the job changes, which refuses a lower one.
	token, err := jobs.Token(held)
	if err != nil {
		return err
	}
	fmt.Printf("%s: running, fencing token %d\n", job, token)
	select {
	case <-time.After(500 * time.Millisecond): // the job's work
		fmt.Printf("%s: done\n", job)
		return nil
	case <-held.Done(): // the lock was lost: stop writing at once
		return fmt.Errorf("%s: %w", job, context.Cause(held))
	case <-ctx.Done(): // Ctrl-C
		return ctx.Err()
	}
}
