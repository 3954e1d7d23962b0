package zklock_test

import (
	"context"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// The four benchmarks run side by side against the same server so that
// their ratios mean something (benchstat over -count runs):
//
//	go test -run '^$' -bench . -count 10 ./zklock | tee zklock.txt
//
// reqs/op is the server's received-packet counter per iteration.

// (a) An ephemeral create and its delete, both awaited: two writes.
func BenchmarkCreateDelete(b *testing.B) {
	s := connect(b, zktest.Servers(b))
	p := zktest.Path(b)
	if err := zkCreateAll(s.Conn(), p); err != nil {
		b.Fatal(err)
	}
	reportRequests(b, func() {
		for i := 0; i < b.N; i++ {
			n, err := s.Conn().Create(p+"/n", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Conn().Delete(n, -1); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// (b) One read round trip.
func BenchmarkGet(b *testing.B) {
	s := connect(b, zktest.Servers(b))
	reportRequests(b, func() {
		for i := 0; i < b.N; i++ {
			if _, _, err := s.Conn().Get("/"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// (c) Uncontended Acquire + Release of a zklock.Lock.
func BenchmarkAcquireRelease(b *testing.B) {
	s := connect(b, zktest.Servers(b))
	l := newLock(b, s, zktest.Path(b))
	ctx := context.Background()
	reportRequests(b, func() {
		for i := 0; i < b.N; i++ {
			h, err := l.Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := h.Release(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// (c') The same with WithoutPipelining: the create and the listing, and
// the release's delete, each awaited. The baseline pipelining is measured
// against.
func BenchmarkAcquireReleaseNotPipelined(b *testing.B) {
	s := connect(b, zktest.Servers(b), zklock.WithoutPipelining())
	l := newLock(b, s, zktest.Path(b))
	ctx := context.Background()
	reportRequests(b, func() {
		for i := 0; i < b.N; i++ {
			h, err := l.Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := h.Release(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// (d) go-zookeeper's zk.Lock, Lock + Unlock: the per-goroutine baseline.
func BenchmarkZkLock(b *testing.B) {
	s := connect(b, zktest.Servers(b))
	l := zk.NewLock(s.Conn(), zktest.Path(b), zk.WorldACL(zk.PermAll))
	reportRequests(b, func() {
		for i := 0; i < b.N; i++ {
			if err := l.Lock(); err != nil {
				b.Fatal(err)
			}
			if err := l.Unlock(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
