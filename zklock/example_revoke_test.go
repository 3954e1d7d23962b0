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
	if err := lock.Acquire(ctx); err != nil {
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
	fmt.Println("asked the holder:", node == lock.Node())

	// The holder is told, and decides: the hold is still valid until it
	// releases.
	select {
	case <-lock.Revoked():
		fmt.Println("revocation requested; still held:", lock.Err() == nil)
		fmt.Println("release:", lock.Release(ctx))
	case <-lock.Lost():
		fmt.Println("lost:", lock.Err())
	case <-ctx.Done():
		fmt.Println(ctx.Err())
	}
	// Output:
	// asked the holder: true
	// revocation requested; still held: true
	// release: <nil>
}
