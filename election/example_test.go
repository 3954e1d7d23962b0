package election_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/tierlock/tierlock/election"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

func ExampleElection_Campaign() {
	ctx := context.Background()
	s, err := zklock.Connect(ctx, zktest.Addrs(), zklock.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	e, err := election.New(s, "/examples/election-campaign")
	if err != nil {
		fmt.Println(err)
		return
	}
	// Campaign waits until this candidate leads; held is cancelled when
	// leadership is lost (session expired, connection dropped) or resigned.
	held, err := e.Campaign(ctx, "node-1:8080")
	if err != nil {
		fmt.Println(err)
		return
	}
	leader, _ := e.Leader(ctx)
	fmt.Println("leader:", leader)

	// Lead until held is done; here, resign at once.
	_ = e.Resign(held)
	<-held.Done()
	fmt.Println("resigned:", context.Cause(held))
	// Output:
	// leader: node-1:8080
	// resigned: election: resigned
}

func ExampleElection_Observe() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	quiet := zklock.WithLogger(slog.New(slog.DiscardHandler))
	const path = "/examples/election-observe"
	watcher, err := zklock.Connect(ctx, zktest.Addrs(), quiet)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer watcher.Close()
	w, _ := election.New(watcher, path)
	leaders := w.Observe(ctx)

	// Two candidates in turn, each on its own session (its own process).
	for _, name := range []string{"first", "second"} {
		s, err := zklock.Connect(ctx, zktest.Addrs(), quiet)
		if err != nil {
			fmt.Println(err)
			return
		}
		e, _ := election.New(s, path)
		if _, err := e.Campaign(ctx, name); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("observed:", <-leaders)
		s.Close() // leadership passes on with the session
	}
	// Output:
	// observed: first
	// observed: second
}
