package tier_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// BenchmarkManyKeys measures 10^4 keys on one registry and one session:
//
//	go test -run '^$' -bench BenchmarkManyKeys -benchtime 1x ./tier
//
// It starts a private standalone server that allows a 10 s session timeout
// (the shared test server caps it at 4 s, whose lease bound of 1 s a
// loaded machine's fsyncs can exceed while 10^4 nodes are written). Each
// iteration acquires every key (32 callers at a time), holds them all, and
// releases them all. Reported per key: time to acquire and release, bytes
// of heap per held key and per idle key, goroutines per held and idle key;
// the server's lock znodes and watches while all are held; and holds lost
// to a lapsed lease (should be 0).
//
// B/idle-key is what stays on the heap once every key was released and
// forgotten. Most of it is high-water marks, not per-key state: the
// runtime keeps the descriptor of every goroutine that ever ran (one
// own-node watcher per held key) for reuse, and Go maps keep their buckets
// (the session's pending deletes and holds). A second round on a fresh
// registry of the same session, after those marks are reached, reports
// B/idle-key-2nd: what a forgotten key costs beyond them.
//
// idle-locks measures 10^4 tier.Locks made with tier.New and never
// acquired, for callers who keep a *Lock per key.
func BenchmarkManyKeys(b *testing.B) {
	const n = 10_000
	c := zktest.Ensemble(b, 1, zkserver.WithSessionTimeouts(400*time.Millisecond, 20*time.Second))
	s := connect(b, c.Addrs(), zklock.WithSessionTimeout(10*time.Second))
	b.Run("registry", func(b *testing.B) {
		for b.Loop() {
			first := manyKeysRound(b, c, s, n)
			second := manyKeysRound(b, c, s, n)
			b.ReportMetric(float64(first.acquire.Microseconds())/n, "µs-acquire/key")
			b.ReportMetric(float64(first.release.Microseconds())/n, "µs-release/key")
			b.ReportMetric(float64(first.heapHeld)/n, "B/held-key")
			b.ReportMetric(float64(max(first.heapIdle, 0))/n, "B/idle-key")
			b.ReportMetric(float64(max(second.heapIdle, 0))/n, "B/idle-key-2nd")
			b.ReportMetric(float64(first.gHeld)/n, "goroutines/held-key")
			b.ReportMetric(float64(max(first.gIdle, second.gIdle))/n, "goroutines/idle-key")
			b.ReportMetric(float64(first.nodes), "lock-znodes")
			b.ReportMetric(float64(first.watches), "watches")
			b.ReportMetric(float64(first.lost+second.lost), "lost-holds")
			b.ReportMetric(float64(first.reqAcq)/n, "reqs-acquire/key")
			b.ReportMetric(float64(first.reqRel)/n, "reqs-release/key")
		}
	})
	b.Run("idle-locks", func(b *testing.B) {
		for b.Loop() {
			root := zktest.Path(b)
			g0 := settledGoroutines(b, 0)
			h0 := heapInUse()
			start := time.Now()
			locks := make([]*tier.Lock, n)
			for i := range locks {
				l, err := tier.New(s, fmt.Sprintf("%s/k%05d", root, i))
				if err != nil {
					b.Fatal(err)
				}
				locks[i] = l
			}
			obtain := time.Since(start)
			hIdle := heapInUse() - h0
			gIdle := runtime.NumGoroutine() - g0
			b.ReportMetric(float64(obtain.Nanoseconds())/n, "ns-new/key")
			b.ReportMetric(float64(hIdle)/n, "B/idle-key")
			b.ReportMetric(float64(gIdle)/n, "goroutines/idle-key")
			for _, l := range locks {
				l.Close()
			}
			runtime.KeepAlive(locks)
		}
	})
}
