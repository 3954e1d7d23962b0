package zklock_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
)

// A guarded write against the same write unguarded, side by side on one
// server (the ratio is the guard's price: a check op inside the same
// multi, so one write round trip either way):
//
//	go test -run '^$' -bench BenchmarkTxn -benchtime 2s -count 3 ./zklock
//
// "interleaved" runs both in one loop and reports their ratio.
func BenchmarkTxn(b *testing.B) {
	s := connect(b, zktest.Servers(b))
	p := zktest.Path(b)
	data := p + "-data"
	if err := zkCreateAll(s.Conn(), data); err != nil {
		b.Fatal(err)
	}
	l := newLock(b, s, p+"/lock")
	ctx := context.Background()
	h, err := l.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	value := []byte("v")
	b.Run("guarded", func(b *testing.B) {
		reportRequests(b, func() {
			for i := 0; i < b.N; i++ {
				if _, err := h.Txn(ctx, &zk.SetDataRequest{Path: data, Data: value, Version: -1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("plain-set", func(b *testing.B) {
		reportRequests(b, func() {
			for i := 0; i < b.N; i++ {
				if _, err := s.Conn().Set(data, value, -1); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	// Both in one loop, alternating, so that the load of a shared machine
	// falls on both alike: the ratio is the figure to read.
	b.Run("interleaved", func(b *testing.B) {
		var guarded, plain time.Duration
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			if _, err := h.Txn(ctx, &zk.SetDataRequest{Path: data, Data: value, Version: -1}); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if _, err := s.Conn().Set(data, value, -1); err != nil {
				b.Fatal(err)
			}
			guarded += t1.Sub(t0)
			plain += time.Since(t1)
		}
		b.ReportMetric(float64(guarded.Microseconds())/float64(b.N), "guarded-µs/op")
		b.ReportMetric(float64(plain.Microseconds())/float64(b.N), "set-µs/op")
		b.ReportMetric(float64(guarded)/float64(plain), "guarded/set")
	})
	b.Run("plain-multi", func(b *testing.B) {
		reportRequests(b, func() {
			for i := 0; i < b.N; i++ {
				if _, err := s.Conn().Multi(&zk.SetDataRequest{Path: data, Data: value, Version: -1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}
