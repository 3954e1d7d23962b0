// Command quickstart is tierlock's core use: many goroutines, in as many
// processes as you start, each running jobs under the lock of the job's
// key. However many copies run, a key's job runs in one goroutine of one
// process at a time.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

const (
	goroutines, rounds = 100, 5 // each goroutine runs 5 jobs, on the keys in turn
	// A copy killed while it holds a key keeps its lock until its session
	// expires, about sessionTimeout after it last spoke: a job waits for
	// its key longer than that, so the key passes on before the wait ends.
	sessionTimeout = 10 * time.Second
	keyWait        = 2 * sessionTimeout
)

var keys = []string{"invoices", "reports", "cleanup", "billing", "backups"}

func main() {
	servers := flag.String("zk", "127.0.0.1:2181", "ZooKeeper servers, host:port,...")
	flag.Parse()
	// Ctrl-C ends the program cleanly, with status 0.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, strings.Split(*servers, ",")); err != nil && ctx.Err() == nil {
		log.Fatal(err)
	}
}

// run connects, runs every goroutine's jobs, and returns the first error.
func run(ctx context.Context, servers []string) error {
	dial, cancel := context.WithTimeout(ctx, 5*time.Second)
	s, err := zklock.Connect(dial, servers, zklock.WithSessionTimeout(sessionTimeout))
	cancel()
	if err != nil { // it says what is wrong: no server answering (scripts/zk.sh start), a chroot...
		return err
	}
	defer s.Close()
	// A lock per key, made on first use: one ZooKeeper node per key this
	// process holds or waits for, whatever its number of goroutines.
	locks, err := tier.NewRegistry(s, "/quickstart/jobs")
	if err != nil {
		return err
	}
	defer locks.Close()
	fmt.Printf("%d goroutines, %d jobs each, on %d keys\n", goroutines, rounds, len(keys))
	errs := make([]error, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				if errs[g] = runJob(ctx, locks, keys[(g+r)%len(keys)]); errs[g] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// runJob waits up to keyWait for key's lock, then runs its job under it.
func runJob(ctx context.Context, locks *tier.Registry, key string) error {
	wait, cancel := context.WithTimeout(ctx, keyWait)
	defer cancel()
	// held carries the hold. It keeps ctx's values but not its
	// cancellation: it ends when the hold does (Release, or a loss).
	held, err := locks.Acquire(wait, key)
	if err != nil {
		return err // names the key, the tier it waited in, and who holds it
	}
	defer locks.Release(held)
	// The fencing token grows with every holder of the key: send it with
	// every write to what the job changes, which refuses a lower one.
	token, err := locks.Token(held)
	if err != nil {
		return err
	}
	select {
	case <-time.After(10 * time.Millisecond): // the job's work
		fmt.Printf("%s: done, fencing token %d\n", key, token)
		return nil
	case <-held.Done(): // the lock was lost: stop writing at once
		return fmt.Errorf("%s: %w", key, context.Cause(held))
	case <-ctx.Done(): // Ctrl-C
		return ctx.Err()
	}
}
