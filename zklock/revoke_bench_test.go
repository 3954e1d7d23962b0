package zklock_test

import (
	"context"
	"testing"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// How long from a requester's RevokeNode call to the holder's Revoked
// closing, on two sessions of one server: the setData round trip plus the
// notification and the holder's re-read of its node. The acquisition and
// release around each request are not timed.
//
//	go test -run '^$' -bench BenchmarkRevokeTold -benchtime 200x -count 5 ./zklock
func BenchmarkRevokeTold(b *testing.B) {
	servers := zktest.Servers(b)
	p := zktest.Path(b)
	l := newLock(b, connect(b, servers), p, zklock.WithRevocable())
	rs := connect(b, servers)
	ctx := context.Background()
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		h, err := l.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		node, rv := h.Node(), h.Revoked()
		b.StartTimer()
		if err := zklock.RevokeNode(ctx, rs, node); err != nil {
			b.Fatal(err)
		}
		<-rv
		b.StopTimer()
		if err := h.Release(); err != nil {
			b.Fatal(err)
		}
	}
}
