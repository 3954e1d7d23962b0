package zklock_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

func ExampleRevokeHolder() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	quiet := zklock.WithLogger(slog.New(slog.DiscardHandler))

	// The holder opts in: its holds can be asked to end.
	holder, err := zklock.Connect(ctx, zktest.Addrs(), quiet)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer holder.Close()
	lock, err := zklock.New(holder, "/examples/zklock-revoke", zklock.WithRevocable())
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

	// Another process (here another session) asks whoever holds the path
	// to let go, as Curator's Revoker.attemptRevoke does.
	other, err := zklock.Connect(ctx, zktest.Addrs(), quiet)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer other.Close()
	node, err := zklock.RevokeHolder(ctx, other, "/examples/zklock-revoke")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("asked the holder:", node == hold.Node())

	// The holder is told, and decides: the hold is still valid until it
	// releases.
	select {
	case <-hold.Revoked():
		fmt.Println("revocation requested; still held:", hold.Err() == nil)
		fmt.Println("release:", hold.Release())
	case <-hold.Lost():
		fmt.Println("lost:", hold.Err())
	case <-ctx.Done():
		fmt.Println(ctx.Err())
	}
	// Output:
	// asked the holder: true
	// revocation requested; still held: true
	// release: <nil>
}
