package zklock_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// Release does not wait for the server; a caller that must know the node
// is gone (before deleting the lock's path, say) waits for the delete
// handler, and has the delete sent at once when no create of its session
// is coming to carry it.
func ExampleWithDeleteHandler() {
	ctx := context.Background()
	s, err := zklock.Connect(ctx, zktest.Addrs(), zklock.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	deleted := make(chan error, 1) // the handler must not block
	lock, err := zklock.New(s, "/examples/zklock-delete-handler",
		zklock.WithDeleteHandler(func(node string, err error) { deleted <- err }))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Close()

	hold, err := lock.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := hold.Release(); err != nil {
		fmt.Println(err)
		return
	}
	s.Flush() // nothing else of this session is coming: send the delete now
	fmt.Println("node deleted:", <-deleted == nil)
	// Output: node deleted: true
}
