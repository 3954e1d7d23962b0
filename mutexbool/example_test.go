package mutexbool_test

import (
	"context"
	"fmt"
	"time"

	"github.com/tierlock/tierlock/mutexbool"
)

func ExampleBooleanMutex() {
	var ready mutexbool.BooleanMutex // zero value: false

	// A ZooKeeper watch callback fires later and reports that the lock may
	// now be ours.
	watch := func() { ready.Set(true) }
	time.AfterFunc(10*time.Millisecond, watch)

	// The acquiring goroutine blocks until the callback has run.
	if err := ready.Get(context.Background()); err != nil {
		fmt.Println("acquire failed:", err)
		return
	}
	fmt.Println("woken, state:", ready.State())
	// Output: woken, state: true
}

func ExampleBooleanMutex_Get_timeout() {
	m := mutexbool.New(false)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	fmt.Println(m.Get(ctx))
	// Output: context deadline exceeded
}
