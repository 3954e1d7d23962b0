package results

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/runner"
)

// legend says what each implementation is, by recipe; a recipe's missing
// entries are the mutex's.
var legend = map[proto.Recipe]map[proto.Impl]string{
	proto.Mutex: {
		proto.Tier:        "tierlock's two-tier lock (what you use: tier.Lock)",
		proto.TierHandoff: "tier.Lock with WithHandoff (bounded local hand-off: faster on a busy path, less fair)",
		proto.Zklock:      "tierlock's process-level lock alone, behind a sync.Mutex (a building block, not what to use)",
		proto.Gozk:        "go-zookeeper's zk.Lock, one per goroutine (the baseline)",
		proto.Zkcompat:    "tierlock's drop-in for zk.Lock (package zkcompat), one per goroutine, one node per process",
		proto.Curator:     "Apache Curator's InterProcessMutex (Java), one per thread",
		proto.Kazoo:       "kazoo's Lock (Python), one per thread",
		proto.Redsync:     "go-redsync/redsync v4's Mutex, one per goroutine and key, on one in-memory redis-server (no fencing token)",
		proto.Nolock:      "no lock at all: a self-test, the checker must find overlaps",
		proto.Mix:         "processes of several implementations on the same paths (-mix; the breakdown below)",
		proto.FakeDrain:   "a test double whose waits are granted after the deadline, as zk.Lock's",
		proto.FakeAbandon: "a test double whose waits are given up at the deadline, as tier's",
	},
	proto.RW: {
		proto.Tier:    "tierlock's read/write lock (what you use: tier.RWLock)",
		proto.Curator: "Apache Curator's InterProcessReadWriteLock (Java), one per thread",
	},
	proto.Semaphore: {
		proto.Tier:    "tierlock's semaphore (what you use: tier.Semaphore)",
		proto.Curator: "Apache Curator's InterProcessSemaphoreV2 (Java), one per path",
	},
	proto.Multi: {
		proto.Tier: "tierlock's multi-lock (what you use: tier.MultiLock)",
	},
}

// Legend says what implementation im is in a run of recipe ("" or an
// unknown recipe: a mutex run).
func Legend(im proto.Impl, recipe proto.Recipe) string {
	if s, ok := legend[recipe][im]; ok {
		return s
	}
	if s, ok := legend[proto.Mutex][im]; ok {
		return s
	}
	return "(not described)"
}

// PrintLegend writes what each of impls is, one a line, under a table.
func PrintLegend(w io.Writer, impls []proto.Impl, recipe proto.Recipe) {
	if len(impls) == 0 {
		return
	}
	fmt.Fprintln(w, "impl:")
	for _, im := range impls {
		printNote(w, fmt.Sprintf("  %-12s  ", im), strings.Repeat(" ", 16), Legend(im, recipe))
	}
}

// Saturation thresholds: a run's machine was saturated when its
// processors were busy more than SaturatedBusy of the time, or a
// hypervisor stole more than SaturatedSteal of it.
const (
	SaturatedBusy  = 0.90
	SaturatedSteal = 0.10
)

// Saturated reports whether h, the machine's figures over a run's window,
// says it was saturated: the run's figures then measure the machine as
// much as the lock. Unknown (nil) is not saturated.
func Saturated(h *runner.HostCPU) bool {
	return h != nil && (h.Busy > SaturatedBusy || h.Steal > SaturatedSteal)
}

// SaturatedNote says what a saturated machine does to a comparison.
const SaturatedNote = "their figures measure the machine as much as the lock; run again with less else running, " +
	"or with fewer -procs or -goroutines."

// Warnings say why the comparison of results is not to be taken at face
// value: runs on a saturated machine, and ratios (or a comparison) that
// rest on one run of each implementation.
func Warnings(results []Impl) []string {
	var out, hot []string
	var busy, steal float64
	for _, r := range results {
		if h := r.Cost.Host; Saturated(h) {
			hot = append(hot, string(r.Impl))
			busy, steal = max(busy, h.Busy), max(steal, h.Steal)
		}
	}
	if len(hot) > 0 {
		out = append(out, fmt.Sprintf("warning: the machine was saturated (busy above %.0f%% or steal above %.0f%%) in the "+
			"run(s) of %s (busy up to %.0f%%, steal up to %.0f%%): %s", 100*SaturatedBusy, 100*SaturatedSteal,
			strings.Join(hot, ", "), 100*busy, 100*steal, SaturatedNote))
	}
	if len(results) > 1 {
		what := "this comparison rests"
		if slices.ContainsFunc(results, func(r Impl) bool { return r.Impl != proto.Gozk && r.ThroughputVsGozk > 0 }) {
			what = "each ratio to gozk rests"
		}
		out = append(out, "warning: "+what+" on one run of each implementation, one after the other; "+OneRunNote)
	}
	return out
}

// OneRunNote says why one run is not enough to rank implementations.
const OneRunNote = "one run cannot separate a few tens of percent (the same lock measured against itself ranged " +
	"0.49–1.54×, docs/matrix.md): repeat it, or run -matrix with -matrix-repeat 3 for medians and their ranges."

// PrintWarnings writes warnings, each wrapped at Width.
func PrintWarnings(w io.Writer, warnings []string) {
	for _, s := range warnings {
		printNote(w, "", "  ", s)
	}
}
