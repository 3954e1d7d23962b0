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
// side with an unobserved lock: each iteration times one acquisition of
// each, in alternating order, so that the load of a shared machine weighs
// on both alike. Reported: none-ns/acq, collector-ns/acq and their ratio.
// A short run suffices:
//
//	go test -run '^$' -bench BenchmarkUncontended -benchtime 2000x -count 3 ./lockmetrics
func BenchmarkUncontended(b *testing.B) {
	s := zktest.Connect(b, zktest.Servers(b))
	m, err := lockmetrics.New(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	locks := [2]*tier.Lock{
		newLock(b, s, zktest.Path(b)+"/none"),
		newLock(b, s, zktest.Path(b)+"/collector", tier.WithObserver(m.Observe)),
	}
	ctx := context.Background()
	var spent [2]time.Duration
	i := 0
	for b.Loop() {
		for k := range 2 {
			which := (i + k) % 2
			start := time.Now()
			held, err := locks[which].Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := locks[which].Release(held); err != nil {
				b.Fatal(err)
			}
			spent[which] += time.Since(start)
		}
		i++
	}
	n := float64(b.N)
	b.ReportMetric(float64(spent[0].Nanoseconds())/n, "none-ns/acq")
	b.ReportMetric(float64(spent[1].Nanoseconds())/n, "collector-ns/acq")
	b.ReportMetric(float64(spent[1])/float64(spent[0]), "ratio")
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
