package runonce

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
)

// TestLatencyP99: the Claim latency histogram's 99th percentile, within a
// bucket (2^(1/4), about 19 %) above the true one.
func TestLatencyP99(t *testing.T) {
	var a, b latency
	for range 98 {
		a.add(time.Millisecond)
	}
	b.add(500 * time.Millisecond)
	b.add(800 * time.Millisecond)
	if got := p99(&a, &b); got < 500*time.Millisecond || got > 600*time.Millisecond {
		t.Errorf("p99 of 98 × 1 ms and 500, 800 ms: %v, want 500-600 ms", got)
	}
	if got := p99(&latency{}, &latency{}); got != 0 {
		t.Errorf("p99 of nothing: %v", got)
	}
	var c latency
	c.add(time.Hour)
	if got := p99(&c, &latency{}); got < 50*time.Second {
		t.Errorf("p99 of an hour: %v, want the last bucket's bound", got)
	}
}

// TestSchedulingLatency: the process's scheduling latency rises when its
// goroutines wait for a processor: sleepers woken while 4 goroutines per
// processor spin.
func TestSchedulingLatency(t *testing.T) {
	var s schedLag
	s.p99()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for range 50 {
				time.Sleep(time.Millisecond)
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	zktest.Wait(t, "the spinners and sleepers", &wg)
	got := s.p99()
	t.Logf("scheduling latency p99 with 4 spinners per processor: %v", got)
	if got < time.Millisecond {
		t.Errorf("scheduling latency p99 %v under a spin storm, want 1 ms or more", got)
	}
}
