package runner

import (
	"os"
	"strconv"
	"strings"
)

// HostCPU is how this machine's processors were spent inside a window,
// from /proc/stat (every processor, every process): Busy, the share spent
// running anything (the workers, the servers, stress, the rest of the
// machine), and Steal, the share a virtual machine's processors were kept
// waiting by its hypervisor for other guests. Steal slows every
// implementation alike but not evenly across runs: on the 2-core virtual
// machine the matrix was measured on it moved between 6 and 28 % from one
// two-second sample to the next, so a run that met more of it is a slow
// machine, not a slow lock.
type HostCPU struct {
	Busy  float64 `json:"busy"`
	Steal float64 `json:"steal"`
}

// cpuTimes are the counters of /proc/stat's "cpu" line, in ticks.
type cpuTimes struct{ busy, steal, total uint64 }

// readCPUTimes reads /proc/stat; false where there is none.
func readCPUTimes() (cpuTimes, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, false
	}
	return parseCPUTimes(string(b))
}

// parseCPUTimes reads the first line, "cpu user nice system idle iowait
// irq softirq steal [guest guest_nice]" (guest time is counted in user
// and nice already, so it is left out of the total).
func parseCPUTimes(stat string) (cpuTimes, bool) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return cpuTimes{}, false
	}
	var v [8]uint64
	for i := range v {
		n, err := strconv.ParseUint(f[i+1], 10, 64)
		if err != nil {
			return cpuTimes{}, false
		}
		v[i] = n
	}
	t := cpuTimes{busy: v[0] + v[1] + v[2] + v[5] + v[6], steal: v[7]}
	for _, x := range v {
		t.total += x
	}
	return t, true
}

// hostBetween is the share of the processors' time between readings a and
// b that was busy and stolen; nil when no time passed between them.
func hostBetween(a, b cpuTimes) *HostCPU {
	if b.total <= a.total || b.busy < a.busy || b.steal < a.steal {
		return nil
	}
	d := float64(b.total - a.total)
	return &HostCPU{Busy: float64(b.busy-a.busy) / d, Steal: float64(b.steal-a.steal) / d}
}
