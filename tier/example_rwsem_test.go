package tier_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/tierlock/tierlock/tier"
)

func ExampleRWLock() {
	ctx := context.Background()
	s, err := exampleSession(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	rw, err := tier.NewRWLock(s, "/examples/tier-rwlock")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rw.Close()

	// Readers share (one read node for the whole process).
	r1, _ := rw.RLock(ctx)
	r2, _ := rw.RLock(ctx)
	fmt.Println("readers:", rw.Readers())
	// An upgrade is refused, not deadlocked.
	_, err = rw.Lock(r1)
	fmt.Println("upgrade refused:", errors.Is(err, tier.ErrUpgrade))
	_ = rw.Release(r1)
	_ = rw.Release(r2)

	// A writer excludes everyone, carries a fencing token, and may
	// downgrade: read under the write hold, then end the write hold.
	w, err := rw.Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	token, _ := rw.Token(w)
	fmt.Println("writer token > 0:", token > 0)
	r, _ := rw.RLock(w)
	_ = rw.Release(w)
	fmt.Println("still reading after the downgrade:", r.Err() == nil)
	_ = rw.Release(r)
	// Output:
	// readers: 2
	// upgrade refused: true
	// writer token > 0: true
	// still reading after the downgrade: true
}

func ExampleSemaphore() {
	ctx := context.Background()
	s, err := exampleSession(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	// At most 3 workers on this resource across the fleet.
	sem, err := tier.NewSemaphore(s, "/examples/tier-semaphore", 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sem.Close()

	held, err := sem.Acquire(ctx, 2) // two permits at once
	if err != nil {
		fmt.Println(err)
		return
	}
	_, ok, _ := sem.TryAcquire(ctx, 2)
	fmt.Println("2 more while 2 of 3 are taken:", ok)
	select {
	case <-held.Done():
		fmt.Println("lease lost:", context.Cause(held))
	default:
		fmt.Println("working with", sem.Permits(held), "permits")
	}
	_ = sem.Release(held)
	// Output:
	// 2 more while 2 of 3 are taken: false
	// working with 2 permits
}
