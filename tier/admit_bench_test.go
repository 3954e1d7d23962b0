package tier

import (
	"context"
	"sync"
	"testing"
)

// Tier 1's cost (target: the gate within 3x of sync.Mutex), side by side
// in one run: BenchmarkAdmission against BenchmarkGate and BenchmarkMutex
// (gate_test.go) uncontended, and the three with 8 goroutines contending.
// The gate's benchmarks go when gate.go does.
func BenchmarkAdmission(b *testing.B) {
	a := newAdmission(1)
	ctx := context.Background()
	for b.Loop() {
		_ = a.acquire(ctx, 1, nil)
		a.release(1)
	}
}

func BenchmarkAdmissionContended8(b *testing.B) {
	a := newAdmission(1)
	ctx := context.Background()
	admitContenders(b, func(pb *testing.PB) {
		for pb.Next() {
			_ = a.acquire(ctx, 1, nil)
			a.release(1)
		}
	})
}

func BenchmarkMutexContended8(b *testing.B) {
	var mu sync.Mutex
	admitContenders(b, func(pb *testing.PB) {
		for pb.Next() {
			mu.Lock()
			mu.Unlock() //nolint:staticcheck // the empty section is what is measured
		}
	})
}
