package runner

import (
	"math"
	"runtime"
	"testing"
)

func TestHostCPU(t *testing.T) {
	// busy = user+nice+system+irq+softirq; the total leaves guest out.
	a, ok := parseCPUTimes("cpu  100 10 50 800 20 5 5 10 7 0\ncpu0 50 5 25 400 10 2 3 5 4 0\n")
	if !ok || a != (cpuTimes{busy: 170, steal: 10, total: 1000}) {
		t.Fatalf("parse = %+v, %v", a, ok)
	}
	b, _ := parseCPUTimes("cpu  200 10 100 1100 20 5 15 50 9 0\n")
	h := hostBetween(a, b) // +160 busy, +40 steal over +500
	if h == nil || math.Abs(h.Busy-0.32) > 1e-9 || math.Abs(h.Steal-0.08) > 1e-9 {
		t.Fatalf("hostBetween = %+v; want busy 0.32, steal 0.08", h)
	}
	if h := hostBetween(a, a); h != nil {
		t.Errorf("no time between readings: %+v; want nil", h)
	}
	if h := hostBetween(b, a); h != nil {
		t.Errorf("readings out of order: %+v; want nil", h)
	}
	for _, bad := range []string{"", "intr 1 2 3", "cpu 1 2 3", "cpu0 1 2 3 4 5 6 7 8", "cpu a 2 3 4 5 6 7 8", "cpu 1 2 3 4 5 6 7 -8"} {
		if _, ok := parseCPUTimes(bad); ok {
			t.Errorf("parseCPUTimes(%q) accepted", bad)
		}
	}
	if _, ok := readCPUTimes(); !ok && runtime.GOOS == "linux" {
		t.Error("no /proc/stat reading on Linux")
	}
}
