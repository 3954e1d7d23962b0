package zklock_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

func ExampleWithPositionHandler() {
	ctx := context.Background()
	quiet := zklock.WithLogger(slog.New(slog.DiscardHandler))
	// Two processes, here two sessions: one holds the lock, one waits.
	a, err := zklock.Connect(ctx, zktest.Addrs(), quiet)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	b, err := zklock.Connect(ctx, zktest.Addrs(), quiet)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()

	const path = "/examples/zklock-position"
	holder, _ := zklock.New(a, path)
	defer holder.Close()
	held, err := holder.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}

	queued := make(chan struct{})
	waiter, _ := zklock.New(b, path, zklock.WithPositionHandler(func(p zklock.Position) {
		// Runs on the goroutine blocked in Acquire: report progress, do
		// not block.
		fmt.Printf("%d ahead of %d queued, leads: %v\n", p.Ahead, p.Queued, p.Leads)
		if !p.Leads {
			close(queued)
		}
	}))
	defer waiter.Close()
	done := make(chan error)
	var hold *zklock.Hold
	go func() {
		var err error
		hold, err = waiter.Acquire(ctx)
		done <- err
	}()

	<-queued // the waiter's node is in the queue, behind the holder's
	_ = held.Release()
	if err := <-done; err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("held")
	_ = hold.Release()
	// Output:
	// 1 ahead of 2 queued, leads: false
	// 0 ahead of 1 queued, leads: true
	// held
}
