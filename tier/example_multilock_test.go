package tier_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/tierlock/tierlock/tier"
)

// Move money between two accounts, each guarded by its own lock, while
// reading a rate table under its read lock: the three as one hold. Another
// transfer naming the accounts in the other order takes them in the same
// (path) order, so the two cannot deadlock.
func ExampleMultiLock() {
	ctx := context.Background()
	s, err := exampleSession(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	to, _ := tier.New(s, "/examples/multi/accounts/bob")
	from, _ := tier.New(s, "/examples/multi/accounts/alice")
	rates, _ := tier.NewRWLock(s, "/examples/multi/rates")
	defer to.Close()
	defer from.Close()
	defer rates.Close()

	m, err := tier.NewMultiLock(to, from, rates.Reader())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("order:", m.Paths())

	held, err := m.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	tokens, _ := m.Tokens(held) // one fencing token per member, by path
	fmt.Println("tokens:", len(tokens))

	select {
	case <-held.Done(): // any member lost ends the whole hold
		var me *tier.MemberError
		if errors.As(context.Cause(held), &me) {
			fmt.Println("lost", me.Path)
		}
	default:
		fmt.Println("transfer under all three locks")
	}

	if err := m.Release(held); err != nil { // in reverse order
		fmt.Println(err)
	}
	fmt.Println("held:", m.HoldCount(held))
	// Output:
	// order: [/examples/multi/accounts/alice /examples/multi/accounts/bob /examples/multi/rates]
	// tokens: 3
	// transfer under all three locks
	// held: 0
}

// A duplicate path is refused: the read and the write side of one lock are
// one member too many.
func ExampleNewMultiLock_duplicate() {
	ctx := context.Background()
	s, err := exampleSession(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	rw, _ := tier.NewRWLock(s, "/examples/multi/dup")
	defer rw.Close()

	_, err = tier.NewMultiLock(rw.Reader(), rw.Writer())
	fmt.Println(errors.Is(err, tier.ErrDuplicateMember))
	// Output:
	// true
}
