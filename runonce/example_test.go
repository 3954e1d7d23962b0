package runonce_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// Three instances of one program (here in one process, each with its own
// session, as separate processes would have) fire the same job's timer for
// the same tick; the tick runs once.
func ExampleRunner_Do() {
	ctx := context.Background()
	var runs atomic.Int32
	var wg sync.WaitGroup
	for range 3 {
		s, err := zklock.Connect(ctx, zktest.Addrs(), zklock.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			fmt.Println(err)
			return
		}
		defer s.Close()
		// One Runner per process, on a root of the fleet's own. The window
		// (default 500 ms) must exceed the spread of the instances' timers.
		r, err := runonce.New(s, "/examples/runonce/do")
		if err != nil {
			fmt.Println(err)
			return
		}
		defer r.Close()
		wg.Go(func() {
			// Where the job's timer fires:
			err := r.Do(ctx, "nightly-report", func(ctx context.Context) error {
				runs.Add(1) // the job's work, watching ctx
				return nil
			})
			if err != nil && !errors.Is(err, runonce.ErrSkipped) {
				fmt.Println(err) // a failure: the tick is not run here
			}
		})
	}
	wg.Wait()
	fmt.Println("runs:", runs.Load())
	// Output: runs: 1
}

// Claim splits Do for a scheduler whose run begins and ends in two calls
// (gocron's Lock and Unlock): the Claim holds the job's lock until its
// Release, and the skip says why.
func ExampleRunner_Claim() {
	ctx := context.Background()
	s, err := zklock.Connect(ctx, zktest.Addrs(), zklock.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	r, err := runonce.New(s, "/examples/runonce/claim", runonce.WithInstanceName("instance-a"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	c, err := r.Claim(ctx, "invoices")
	if err != nil {
		fmt.Println(err)
		return
	}
	// The run: c.Context() ends if the job's lock is lost.
	_ = c.Context()
	if err := c.Release(); err != nil {
		fmt.Println(err)
	}
	// The same tick again, on this or any instance: already run.
	_, err = r.Claim(ctx, "invoices")
	fmt.Println("again:", errors.Is(err, runonce.ErrAlreadyRan))
	last, err := r.LastRun(ctx, "invoices")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("last run by", last.By)
	// Output:
	// again: true
	// last run by instance-a
}
