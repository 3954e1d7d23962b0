package zkcompat_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
)

// BenchmarkVsZkLock runs the drop-in and zk.Lock side by side, alternated
// (each iteration runs the shape once with each, the first of the two
// taking turns), in the shapes of cost_test.go: a local hand-off (two
// handles of one process on one path) and sixteen paths (sixteen handles,
// each going round the paths). Each has its own connection, tapped: the
// requests it wrote per hold, and its time per hold in round trips, a
// round trip being the median of 16 reads (exists) measured on the same
// connection in the same iteration. ratio is the drop-in's time over
// zk.Lock's, summed over the iterations:
//
//	go test -run '^$' -bench VsZkLock -benchtime 20x -count 3 ./zkcompat
func BenchmarkVsZkLock(b *testing.B) {
	for _, sh := range costShape {
		b.Run("shape="+sh.name, func(b *testing.B) {
			var conns [2]*zk.Conn
			var taps [2]*wireTap
			var paths [2][]string
			for i := range impls {
				conns[i], taps[i] = tapped(b)
				paths[i] = shapePaths(b, conns[i], sh.paths)
			}
			var took, rtt [2]time.Duration
			var reqs [2]int64
			b.ResetTimer()
			for n := range b.N {
				for k := range impls {
					i := (k + n) % 2
					rtt[i] += roundTrip(b, conns[i], paths[i][0])
					before := taps[i].counts()
					start := time.Now()
					if err := sh.run(conns[i], paths[i], impls[i].newLock); err != nil {
						b.Fatal(err)
					}
					took[i] += time.Since(start)
					reqs[i] += taps[i].counts().minus(before).reqs
				}
			}
			b.StopTimer()
			holds := float64(b.N * sh.holds())
			for i, im := range impls {
				b.ReportMetric(float64(reqs[i])/holds, im.name+"-reqs/hold")
				b.ReportMetric(float64(took[i])/holds/(float64(rtt[i])/float64(b.N)), im.name+"-rtts/hold")
				b.ReportMetric(float64(took[i].Microseconds())/holds, im.name+"-µs/hold")
			}
			b.ReportMetric(float64(took[1])/float64(took[0]), "ratio")
		})
	}
}

// roundTrip is the median time of 16 reads on c.
func roundTrip(b *testing.B, c *zk.Conn, path string) time.Duration {
	ds := make([]time.Duration, 16)
	for i := range ds {
		start := time.Now()
		if _, _, err := c.Exists(path); err != nil {
			b.Fatal(err)
		}
		ds[i] = time.Since(start)
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// BenchmarkNewPathVsZkLock times the first Lock of a path that does not
// exist yet (the lock makes it, as zk.Lock does), from NewLock to Lock's
// return, the drop-in's and zk.Lock's alternated on one connection each:
// the medians of each, and ratio, the drop-in's median over zk.Lock's.
//
//	go test -run '^$' -bench NewPathVsZkLock -benchtime 1000x -count 3 ./zkcompat
func BenchmarkNewPathVsZkLock(b *testing.B) {
	var conns [2]*zk.Conn
	for i := range impls {
		conns[i], _ = tapped(b)
	}
	root := zktest.Path(b)
	createParents(b, conns[0], root+"/x")
	lat := [2][]time.Duration{make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)}
	b.ResetTimer()
	for n := range b.N {
		for k := range impls {
			i := (k + n) % 2
			start := time.Now()
			l := impls[i].newLock(conns[i], fmt.Sprintf("%s/%d/%d", root, i, n))
			if err := l.Lock(); err != nil {
				b.Fatal(err)
			}
			lat[i] = append(lat[i], time.Since(start))
			b.StopTimer()
			if err := l.Unlock(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	b.StopTimer()
	var med [2]float64
	for i, im := range impls {
		slices.Sort(lat[i])
		med[i] = float64(lat[i][len(lat[i])/2].Microseconds())
		b.ReportMetric(med[i], im.name+"-p50-µs")
	}
	b.ReportMetric(med[1]/med[0], "ratio")
}
