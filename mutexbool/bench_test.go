package mutexbool_test

import (
	"context"
	"testing"

	"github.com/tierlock/tierlock/mutexbool"
)

func BenchmarkGetWhenTrue(b *testing.B) {
	m := mutexbool.New(true)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Get(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetWhenTrueParallel(b *testing.B) {
	m := mutexbool.New(true)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := m.Get(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkSetToggle(b *testing.B) {
	m := mutexbool.New(false)
	b.ReportAllocs()
	for b.Loop() {
		m.Set(true)
		m.Set(false)
	}
}

// BenchmarkWakeupHandoff measures one round trip between two goroutines:
// each waits on its own mutex, resets it, and wakes the other.
func BenchmarkWakeupHandoff(b *testing.B) {
	ping, pong := mutexbool.New(false), mutexbool.New(false)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ping.Get(ctx) == nil {
			ping.Set(false)
			pong.Set(true)
		}
	}()

	b.ReportAllocs()
	for b.Loop() {
		ping.Set(true)
		if err := pong.Get(ctx); err != nil {
			b.Fatal(err)
		}
		pong.Set(false)
	}
	b.StopTimer()
	cancel()
	<-done
}
