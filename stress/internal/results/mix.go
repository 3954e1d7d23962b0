package results

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/runner"
)

// PrintMix tells, for a mixed run, which process ran which implementation,
// what each implementation got, and which implementations' holds
// overlapped (the checker's examples name processes).
func PrintMix(w io.Writer, cfg runner.Config, runs []*runner.Run) {
	for _, run := range runs {
		if run.Name != proto.Mix {
			continue
		}
		famOf := func(proc int32) string {
			if int(proc) < len(run.SlotOf) {
				return string(cfg.ImplOf(proto.Mix, run.SlotOf[proc]))
			}
			return "?"
		}
		var procs []string
		for p := range run.SlotOf {
			procs = append(procs, fmt.Sprintf("%d %s", p, famOf(int32(p))))
		}
		fmt.Fprintf(w, "mix: processes: %s\n", strings.Join(procs, ", "))
		acq := map[proto.Impl]int64{}
		for slot, n := range run.PerProc {
			acq[cfg.ImplOf(proto.Mix, slot)] += n
		}
		var total int64
		for _, n := range acq {
			total += n
		}
		fmt.Fprintf(w, "  %-14s %6s %13s %8s %7s\n", "impl", "procs", "acquisitions", "acq/s", "share")
		for _, m := range cfg.Mix {
			share := 0.0
			if total > 0 {
				share = float64(acq[m.Impl]) / float64(total)
			}
			fmt.Fprintf(w, "  %-14s %6d %13d %8.0f %6.1f%%\n", m.Impl, m.Procs, acq[m.Impl],
				float64(acq[m.Impl])/run.Elapsed.Seconds(), 100*share)
		}
		pairs := exclusion.OverlapPairs(run.Holds, famOf)
		if len(pairs) == 0 {
			fmt.Fprintln(w, "  no overlapping holds")
			continue
		}
		var keys []string
		for k := range pairs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "  overlapping holds %s: %d\n", k, pairs[k])
		}
	}
}
