package lockmetrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/lockmetrics"
	"github.com/tierlock/tierlock/tier"
)

// The collector's cost on tier's uncontended Acquire + Release, side by
// side with the same lock unobserved (obs=none). Short runs suffice:
//
//	go test -run '^$' -bench 'BenchmarkUncontended' -benchtime 2000x -count 3 ./lockmetrics
func BenchmarkUncontended(b *testing.B) {
	for _, obs := range []string{"none", "collector"} {
		b.Run("obs="+obs, func(b *testing.B) {
			s := zktest.Connect(b, zktest.Servers(b))
			var opts []tier.Option
			if obs == "collector" {
				m, err := lockmetrics.New(prometheus.NewRegistry())
				if err != nil {
					b.Fatal(err)
				}
				opts = append(opts, tier.WithObserver(m.Observe))
			}
			l := newLock(b, s, zktest.Path(b), opts...)
			ctx := context.Background()
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
}

// The collector alone: the three events of one acquisition (Acquiring,
// Acquired, Released), which is its whole cost on any path, hand-offs
// included. name=prefix adds a Prefix(2) lock name function.
func BenchmarkObserveAcquisition(b *testing.B) {
	for _, name := range []string{"default", "prefix"} {
		b.Run("name="+name, func(b *testing.B) {
			var opts []lockmetrics.Option
			if name == "prefix" {
				opts = append(opts, lockmetrics.WithLockName(lockmetrics.Prefix(2)))
			}
			m, err := lockmetrics.New(prometheus.NewRegistry(), opts...)
			if err != nil {
				b.Fatal(err)
			}
			const path = "/app/jobs/job-1"
			b.ReportAllocs()
			for b.Loop() {
				m.Observe(tier.Event{Kind: tier.Acquiring, Path: path})
				m.Observe(tier.Event{Kind: tier.Acquired, Path: path, Tier: tier.TierZooKeeper, Wait: time.Millisecond})
				m.Observe(tier.Event{Kind: tier.Released, Path: path, Held: time.Millisecond})
			}
		})
	}
}
