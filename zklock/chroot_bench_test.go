package zklock_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// The cost of a chroot: the same work on a session without one and on a
// session with one, side by side against one server (each -count round
// runs both), with the server's requests and the client's CPU per
// operation (zktest.ReportRequests):
//
//	go test -run '^$' -bench ChrootSession -count 10 ./zklock
//
// acquire-release is one lock, uncontended, one request in flight at a
// time; parallel-64 is 64 goroutines, each with its own lock on the
// session, so that many requests are out and the tap batches their
// writes, every frame rewritten with a chroot.
func BenchmarkChrootSession(b *testing.B) {
	root := connect(b, zktest.Servers(b))
	chroot := zktest.Path(b)
	if err := zkCreateAll(root.Conn(), chroot); err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"plain", "chroot"} {
		servers := zktest.Servers(b)
		if name == "chroot" {
			servers[len(servers)-1] += chroot
		}
		b.Run(name+"/acquire-release", func(b *testing.B) {
			l := newLock(b, connect(b, servers), zktest.Path(b))
			reportRequests(b, func() {
				for i := 0; i < b.N; i++ {
					if err := cycle(l); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
		b.Run(name+"/parallel-64", func(b *testing.B) {
			s, base := connect(b, servers), zktest.Path(b)
			var next atomic.Int64
			b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
			reportRequests(b, func() {
				b.RunParallel(func(pb *testing.PB) {
					l, err := zklock.New(s, fmt.Sprintf("%s/%d", base, next.Add(1)))
					if err != nil {
						b.Error(err)
						return
					}
					defer l.Close()
					for pb.Next() {
						if err := cycle(l); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		})
	}
}

// cycle takes l and gives it back.
func cycle(l *zklock.Lock) error {
	h, err := l.Acquire(context.Background())
	if err == nil {
		err = h.Release()
	}
	return err
}
