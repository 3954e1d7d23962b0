package tier_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

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

func ExampleRegistry_Obtain() {
	ctx := context.Background()
	s, err := exampleSession(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	// One lock per job, at /examples/tier-registry/<key>, shared by every
	// goroutine of the process.
	reg, err := tier.NewRegistry(s, "/examples/tier-registry")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reg.Close()

	lock, err := reg.Obtain("job-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	held, err := lock.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("holding", lock.Path())

	// Another caller asking for job-1 gets the same lock, held.
	other, _ := reg.Obtain("job-1")
	_, ok, err := other.TryAcquire(context.Background())
	fmt.Println("job-1 free for another caller:", ok, err)

	// Other keys are other locks.
	job2, _ := reg.Obtain("job-2")
	held2, ok, err := job2.TryAcquire(ctx)
	fmt.Println("job-2 free:", ok, err)
	if ok {
		job2.Release(held2)
	}

	if err := lock.Release(held); err != nil {
		fmt.Println(err)
	}
	// Output:
	// holding /examples/tier-registry/job-1
	// job-1 free for another caller: false <nil>
	// job-2 free: true <nil>
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
