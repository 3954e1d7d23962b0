package tier_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
)

// Run side by side, against one server:
//
//	go test -run '^$' -bench . -count 6 ./tier | tee tier.txt && benchstat tier.txt

// benchHeld returns a lock on a server of the benchmark's and the context
// of its hold, released at the benchmark's end.
func benchHeld(b *testing.B) (*tier.Lock, context.Context) {
	s := connect(b, zktest.Servers(b))
	l := newLock(b, s, zktest.Path(b))
	held, err := l.Acquire(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Release(held) })
	return l, held
}

// Re-entering a held lock: no ZooKeeper request (goal: under 100 ns).
func BenchmarkReentrant(b *testing.B) {
	l, held := benchHeld(b)
	counted(b, func() {
		for b.Loop() {
			if _, err := l.Acquire(held); err != nil {
				b.Fatal(err)
			}
			if err := l.Release(held); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A question asked of a held lock: each judges the lease at that moment
// (a monotonic clock reading), and a hand-off asks several.
func BenchmarkQuestion(b *testing.B) {
	l, held := benchHeld(b)
	b.Run("Done", func(b *testing.B) {
		counted(b, func() {
			for b.Loop() {
				_ = held.Done()
			}
		})
	})
	b.Run("Token", func(b *testing.B) {
		counted(b, func() {
			for b.Loop() {
				if _, err := l.Token(held); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// Uncontended Acquire + Release through both tiers.
func BenchmarkUncontended(b *testing.B) {
	s := connect(b, zktest.Servers(b))
	l := newLock(b, s, zktest.Path(b))
	ctx := context.Background()
	counted(b, func() {
		for b.Loop() {
			held, err := l.Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(held); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// 32 goroutines of one process on one path: the tier lock, strict and with
// hand-off, against 32 per-goroutine go-zookeeper zk.Locks (the baseline),
// each goroutine on its own zk.Lock over the process's one connection.
// Reported: acquisitions per second, server requests per acquisition, peak
// znodes under the path. Goals: strict >= zk.Lock; hand-off >= 20x.
func BenchmarkContended32(b *testing.B) {
	const goroutines = 32
	b.Run("impl=zk.Lock", func(b *testing.B) {
		s := connect(b, zktest.Servers(b))
		p := zktest.Path(b)
		locks := make([]*zk.Lock, goroutines)
		for i := range locks {
			locks[i] = zk.NewLock(s.Conn(), p, zk.WorldACL(zk.PermAll))
		}
		contend(b, s.Conn(), p, goroutines, func(g int) error {
			if err := locks[g].Lock(); err != nil {
				return err
			}
			return locks[g].Unlock()
		})
	})
	for _, mode := range []struct {
		name string
		opts []tier.Option
	}{
		{"impl=tier-strict", nil},
		{"impl=tier-handoff", []tier.Option{tier.WithHandoff(64, 50*time.Millisecond)}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			s := connect(b, zktest.Servers(b))
			p := zktest.Path(b)
			l := newLock(b, s, p, mode.opts...)
			ctx := context.Background()
			contend(b, s.Conn(), p, goroutines, func(int) error {
				held, err := l.Acquire(ctx)
				if err != nil {
					return err
				}
				return l.Release(held)
			})
		})
	}
}

// contend runs b.N acquisitions spread over n goroutines and reports
// acquisitions per second, requests per acquisition and peak znodes.
func contend(b *testing.B, conn *zk.Conn, path string, n int, acquire func(g int) error) {
	var left atomic.Int64
	left.Store(int64(b.N))
	var peak atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			if c, _, err := conn.Children(path); err == nil && int64(len(c)) > peak.Load() {
				peak.Store(int64(len(c)))
			}
		}
	}()
	counted(b, func() {
		start := time.Now()
		var wg sync.WaitGroup
		for g := 0; g < n; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for left.Add(-1) >= 0 {
					if err := acquire(g); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "acq/s")
	})
	close(stop)
	sampler.Wait()
	b.ReportMetric(float64(peak.Load()), "peak-znodes")
}
