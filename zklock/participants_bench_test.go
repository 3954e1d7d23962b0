package zklock_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// BenchmarkListParticipants measures a listing of a queue of three
// (a holder, two waiters) and the requests it costs (reqs/op: one
// getChildren and one getData per node, 4).
func BenchmarkListParticipants(b *testing.B) {
	servers := zktest.Servers(b)
	s := connect(b, servers)
	p := zktest.Path(b)
	ctx := ctxT(b, time.Minute)
	wctx, cancel := context.WithCancel(ctx)
	var done []<-chan acquired
	for i := range 3 {
		l := newLock(b, connect(b, servers), p)
		if i == 0 {
			if _, err := l.Acquire(ctx); err != nil {
				b.Fatal(err)
			}
			continue
		}
		done = append(done, goAcquire(wctx, l))
	}
	eventually(b, 10*time.Second, "queue of 3", func() bool { return len(children(b, s.Conn(), p)) == 3 })
	reportRequests(b, func() {
		for range b.N {
			if ps, err := zklock.ListParticipants(ctx, s, p); err != nil || len(ps) != 3 {
				b.Fatal(ps, err)
			}
		}
	})
	cancel()
	for _, d := range done {
		<-d
	}
}

// BenchmarkListParticipants30 lists a queue of 30 (a holder and 29 plain
// lock nodes): 31 requests, the getData pipelined (readAll). With
// maxReadsInFlight = 1 (serial reads) it took 2.5 times as long here.
func BenchmarkListParticipants30(b *testing.B) {
	s := connect(b, zktest.Servers(b))
	p := zktest.Path(b)
	l := newLock(b, s, p)
	ctx := ctxT(b, time.Minute)
	if _, err := l.Acquire(ctx); err != nil {
		b.Fatal(err)
	}
	for range 29 {
		if _, err := s.Conn().Create(p+"/_c_x-lock-", []byte("{}"), zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll)); err != nil {
			b.Fatal(err)
		}
	}
	reportRequests(b, func() {
		for range b.N {
			if ps, err := zklock.ListParticipants(ctx, s, p); err != nil || len(ps) != 30 {
				b.Fatal(ps, err)
			}
		}
	})
}
