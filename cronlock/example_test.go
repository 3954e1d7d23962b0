package cronlock_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/tierlock/tierlock/cronlock"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// Three instances of one program (here in one process, each with its own
// session, as separate processes would have) schedule the same job every
// second; its first tick runs once.
func ExampleLocker_Wrapper() {
	ctx := context.Background()
	var runs atomic.Int32
	first := make(chan struct{}, 3)
	var crons []*cron.Cron
	for range 3 {
		s, err := zklock.Connect(ctx, zktest.Addrs(), zklock.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			fmt.Println(err)
			return
		}
		defer s.Close()
		// One Locker per process, on a root of the fleet's own.
		locker, err := cronlock.New(s, "/examples/cronlock/wrapper")
		if err != nil {
			fmt.Println(err)
			return
		}
		defer locker.Close()
		// Wrapper last in the chain, so that it sees each job's name.
		c := cron.New(cron.WithSeconds(), cron.WithChain(locker.Wrapper()))
		_, err = c.AddJob("* * * * * *", cronlock.Named("nightly-report", cron.FuncJob(func() {
			runs.Add(1)
			first <- struct{}{}
		})))
		if err != nil {
			fmt.Println(err)
			return
		}
		c.Start()
		crons = append(crons, c)
	}
	<-first
	time.Sleep(300 * time.Millisecond) // the other instances' attempts of the tick
	for _, c := range crons {
		<-c.Stop().Done()
	}
	fmt.Println("runs:", runs.Load())
	// Output: runs: 1
}

// Wrap locks one job under a name, without a chain for the whole Cron.
func ExampleLocker_Wrap() {
	ctx := context.Background()
	s, err := zklock.Connect(ctx, zktest.Addrs(), zklock.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	locker, err := cronlock.New(s, "/examples/cronlock/wrap", runonce.WithInstanceName("instance-a"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ran := make(chan struct{}, 1)
	job := cron.NewChain(locker.Wrap("invoices")).Then(cron.FuncJob(func() {
		select {
		case ran <- struct{}{}:
		default:
		}
	}))
	c := cron.New(cron.WithSeconds())
	if _, err := c.AddJob("* * * * * *", job); err != nil {
		fmt.Println(err)
		return
	}
	c.Start()
	<-ran
	<-c.Stop().Done()
	last, err := locker.LastRun(ctx, "invoices")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("last run by", last.By)
	// Output: last run by instance-a
}
