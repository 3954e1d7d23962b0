package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// A write to ZooKeeper that lands only while the lock is held: the server
// checks the hold's node in the same transaction.
func ExampleHold_Txn() {
	ctx := context.Background()
	s, err := zklock.Connect(ctx, zktest.Addrs(), zklock.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	lock, err := zklock.New(s, "/examples/zklock-txn/lock")
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
	defer hold.Release()

	acl := zk.WorldACL(zk.PermAll)
	res, err := hold.Txn(ctx,
		&zk.CreateRequest{Path: "/examples/zklock-txn/leader", Data: []byte("me"), Acl: acl, Flags: zk.FlagEphemeral},
		&zk.SetDataRequest{Path: "/examples/zklock-txn/leader", Data: []byte("me, again"), Version: 0})
	switch {
	case errors.Is(err, zklock.ErrLockLost):
		fmt.Println("not the holder any more; nothing written:", err)
	case errors.Is(err, zklock.ErrOutcomeUnknown):
		fmt.Println("maybe written: read it back before trying again")
	case err != nil:
		fmt.Println(err) // an *zklock.OpError says which op failed; nothing written
	default:
		fmt.Println("created", res[0].String, "then version", res[1].Stat.Version)
	}
	// Output: created /examples/zklock-txn/leader then version 1
}
