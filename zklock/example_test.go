package zklock_test

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

func ExampleConnect() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The servers of your ensemble, e.g. []string{"zk1:2181", "zk2:2181"};
	// here the ZooKeeper the package's tests share.
	servers := zktest.Addrs()

	// One Session per process, shared by all its locks. Connect returns
	// once a ZooKeeper session is established (or ctx ends).
	s, err := zklock.Connect(ctx, servers,
		zklock.WithSessionTimeout(10*time.Second), // a crashed holder's locks pass on after this
		zklock.WithLogger(slog.New(slog.DiscardHandler)),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close() // deletes the session's lock nodes at once

	fmt.Println("state:", s.State())
	// Output: state: connected
}

func ExampleLock_Acquire() {
	ctx := context.Background()
	s, err := zklock.Connect(ctx, zktest.Addrs(), zklock.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	// A process-level lock: one holder at a time, not reentrant. To share
	// a lock among goroutines, use package tier.
	lock, err := zklock.New(s, "/examples/zklock-acquire", zklock.WithLabel("example"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Close()

	if err := lock.Acquire(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("node under:", path.Dir(lock.Node()))
	fmt.Println("fencing token > 0:", lock.Token() > 0)

	// Another lock on the path (as in another process) cannot have it.
	other, err := zklock.New(s, "/examples/zklock-acquire")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer other.Close()
	ok, err := other.TryAcquire(ctx)
	fmt.Println("other TryAcquire:", ok, err)

	// Lost is closed if the hold ends without Release (session expired,
	// connection lost, node deleted).
	select {
	case <-lock.Lost():
		fmt.Println("lost:", lock.Err())
	default:
		fmt.Println("still held")
	}

	if err := lock.Release(ctx); err != nil {
		fmt.Println(err)
	}
	fmt.Println("after Release, token:", lock.Token())
	// Output:
	// node under: /examples/zklock-acquire
	// fencing token > 0: true
	// other TryAcquire: false <nil>
	// still held
	// after Release, token: 0
}
