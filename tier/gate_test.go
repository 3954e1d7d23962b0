package tier

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Goroutines blocked at the gate are served in the order they blocked.
func TestGateFIFO(t *testing.T) {
	g := newGate()
	g.enter(context.Background(), nil)
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := g.enter(context.Background(), nil); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			g.leave()
		}()
		for g.waiters() != int32(i+1) {
			time.Sleep(time.Millisecond)
		}
	}
	g.leave()
	wg.Wait()
	for i, v := range order {
		if v != i {
			t.Fatalf("gate served out of order: %v", order)
		}
	}
}

func TestGateCancel(t *testing.T) {
	g := newGate()
	g.enter(context.Background(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := g.enter(ctx, nil); err != context.DeadlineExceeded {
		t.Fatalf("enter past deadline: %v", err)
	}
	closed := make(chan struct{})
	close(closed)
	if err := g.enter(context.Background(), closed); err != ErrClosed {
		t.Fatalf("enter on a closed lock: %v", err)
	}
	if g.tryEnter() || g.waiters() != 0 {
		t.Fatal("abandoned waits changed the gate")
	}
	g.leave()
	if !g.tryEnter() {
		t.Fatal("gate not free")
	}
}

// The gate alone against sync.Mutex (goal: within 3x), uncontended and
// with every goroutine contending.
func BenchmarkGate(b *testing.B) {
	g := newGate()
	ctx := context.Background()
	for b.Loop() {
		_ = g.enter(ctx, nil)
		g.leave()
	}
}

func BenchmarkMutex(b *testing.B) {
	var mu sync.Mutex
	for b.Loop() {
		mu.Lock()
		mu.Unlock() //nolint:staticcheck // the empty section is what is measured
	}
}

func BenchmarkGateParallel(b *testing.B) {
	g := newGate()
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = g.enter(ctx, nil)
			g.leave()
		}
	})
}

func BenchmarkMutexParallel(b *testing.B) {
	var mu sync.Mutex
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			mu.Lock()
			mu.Unlock() //nolint:staticcheck // the empty section is what is measured
		}
	})
}
