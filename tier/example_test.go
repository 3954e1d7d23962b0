package tier_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/fence"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// exampleSession connects to the ZooKeeper the package's tests share. In
// your program: zklock.Connect(ctx, []string{"zk1:2181", "zk2:2181"}).
func exampleSession(ctx context.Context) (*zklock.Session, error) {
	return zklock.Connect(ctx, zktest.Addrs(), zklock.WithLogger(slog.New(slog.DiscardHandler)))
}

func ExampleLock_Acquire() {
	ctx := context.Background()
	s, err := exampleSession(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	lock, err := tier.New(s, "/examples/tier-acquire")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Close()

	// ctx bounds the wait; held carries the hold.
	held, err := lock.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	token, _ := lock.Token(held) // send it with every write you guard
	fmt.Println("held:", lock.HoldCount(held), "token > 0:", token > 0)

	// Work under the lock, giving up if it is lost.
	select {
	case <-held.Done():
		fmt.Println("lock lost:", context.Cause(held))
	default:
		fmt.Println("working")
	}

	if err := lock.Release(held); err != nil {
		fmt.Println(err)
	}
	fmt.Println("released:", lock.HoldCount(held))
	// Output:
	// held: 1 token > 0: true
	// working
	// released: 0
}

func ExampleLock_Acquire_reentrant() {
	ctx := context.Background()
	s, err := exampleSession(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	lock, err := tier.New(s, "/examples/tier-reentrant")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Close()

	// update needs the lock. Called with a context that already holds it,
	// its Acquire re-enters: a count, no ZooKeeper request.
	update := func(ctx context.Context) error {
		held, err := lock.Acquire(ctx)
		if err != nil {
			return err
		}
		defer lock.Release(held)
		fmt.Println("update: hold count", lock.HoldCount(held))
		return nil
	}

	held, err := lock.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := update(held); err != nil {
		fmt.Println(err)
	}
	fmt.Println("after update: hold count", lock.HoldCount(held))
	fmt.Println("release:", lock.Release(held))

	// One Release too many is an error, not a panic.
	err = lock.Release(held)
	fmt.Println("extra release is ErrNotHolder:", errors.Is(err, tier.ErrNotHolder))
	// Output:
	// update: hold count 2
	// after update: hold count 1
	// release: <nil>
	// extra release is ErrNotHolder: true
}

func ExampleRegistry() {
	ctx := context.Background()
	s, err := exampleSession(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	// One lock per job, at /examples/tier-registry/<key>, shared by every
	// goroutine of the process; a key's lock exists while it is acquired
	// or held.
	reg, err := tier.NewRegistry(s, "/examples/tier-registry")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reg.Close()

	held, err := reg.Acquire(ctx, "job-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("holding job-1; locks in use:", reg.Len())

	// Another caller asking for job-1 finds it held.
	_, ok, err := reg.TryAcquire(context.Background(), "job-1")
	fmt.Println("job-1 free for another caller:", ok, err)

	// Other keys are other locks.
	held2, ok, err := reg.TryAcquire(ctx, "job-2")
	fmt.Println("job-2 free:", ok, err)
	if ok {
		reg.Release(held2)
	}

	if err := reg.Release(held); err != nil {
		fmt.Println(err)
	}
	fmt.Println("locks in use:", reg.Len())
	// Output:
	// holding job-1; locks in use: 1
	// job-1 free for another caller: false <nil>
	// job-2 free: true <nil>
	// locks in use: 0
}

func ExampleLock_Locker() {
	ctx := context.Background()
	s, err := exampleSession(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	lock, err := tier.New(s, "/examples/tier-locker")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Close()

	// A sync.Locker for code that wants one. Like sync.Mutex it is not
	// reentrant, and it cannot report errors: use Acquire and Release for
	// those, and for the lost-lock context.
	var mu sync.Locker = lock.Locker()

	counter := 0
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				mu.Lock()
				counter++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	fmt.Println("counter:", counter)
	// Output: counter: 20
}

// Guarded writes: to ZooKeeper through Txn (the server checks the hold),
// to anything else through a fence that sees the hold's token.
func ExampleLock_Txn() {
	ctx := context.Background()
	s, err := exampleSession(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	lock, err := tier.New(s, "/examples/tier-txn/lock")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Close()
	held, err := lock.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}

	// In ZooKeeper: applied only while held's hold stands at the server.
	_, err = lock.Txn(held, &zk.CreateRequest{Path: "/examples/tier-txn/owner", Data: []byte("me"),
		Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral})
	fmt.Println("zookeeper write:", err)

	// Elsewhere: the resource keeps a fence and admits the token.
	var resource fence.Fence
	token, _ := lock.Token(held)
	fmt.Println("resource write:", resource.Do(token, func() error { return nil }))

	if err := lock.Release(held); err != nil {
		fmt.Println(err)
	}
	// After Release the context holds nothing: refused, nothing sent.
	_, err = lock.Txn(held, &zk.DeleteRequest{Path: "/examples/tier-txn/owner", Version: -1})
	fmt.Println("after release:", errors.Is(err, tier.ErrNotHolder))
	// Output:
	// zookeeper write: <nil>
	// resource write: <nil>
	// after release: true
}

func ExampleLock_Revoked() {
	ctx := context.Background()
	s, err := exampleSession(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	// Holds of this lock can be asked to end (Curator's revocation).
	lock, err := tier.New(s, "/examples/tier-revoked", tier.WithRevocable())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Close()
	held, err := lock.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}

	// Someone asks the holder to let go: another process with
	// zklock.RevokeHolder, or a Java service with Curator's Revoker.
	if _, err := zklock.RevokeHolder(ctx, s, lock.Path()); err != nil {
		fmt.Println(err)
		return
	}

	// A request, not a cancellation: the work decides when to stop.
	select {
	case <-lock.Revoked(held):
		fmt.Println("asked to release; held context live:", held.Err() == nil)
	case <-held.Done():
		fmt.Println("lost:", context.Cause(held))
	}
	fmt.Println("release:", lock.Release(held))
	// Output:
	// asked to release; held context live: true
	// release: <nil>
}
