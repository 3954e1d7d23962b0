package fence_test

import (
	"errors"
	"fmt"

	"github.com/tierlock/tierlock/fence"
)

// A resource outside ZooKeeper keeps a Fence and writes only through it.
// The tokens come from the lock: zklock.Lock.Token, tier.Lock.Token.
func ExampleFence_Do() {
	var f fence.Fence
	var value string
	write := func(token int64, v string) error {
		return f.Do(token, func() error { value = v; return nil })
	}

	fmt.Println(write(100, "from the holder with token 100"))
	// The next holder of the lock has a higher token.
	fmt.Println(write(130, "from the holder with token 130"))
	// The first holder, paused past its session, wakes up and writes.
	err := write(100, "stale")
	fmt.Println(errors.Is(err, fence.ErrStaleToken), err)
	fmt.Println(value)
	// Output:
	// <nil>
	// <nil>
	// true fence: stale token: 100 is below 130
	// from the holder with token 130
}

// Consecutive local holders under tier.WithHandoff share one token: it is
// admitted again.
func ExampleFence_Admit() {
	var f fence.Fence
	fmt.Println(f.Admit(42), f.Admit(42), f.High())
	// Output: <nil> <nil> 42
}

// One fence per resource, by key (here, one per job).
func ExampleKeyed() {
	var jobs fence.Keyed[string]
	fmt.Println(jobs.Admit("billing", 7))
	fmt.Println(jobs.Admit("reports", 3)) // another key, another fence
	fmt.Println(jobs.Admit("billing", 5))
	// Output:
	// <nil>
	// <nil>
	// fence: stale token: 5 is below 7
}
