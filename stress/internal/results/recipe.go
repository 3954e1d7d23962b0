package results

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/stress/internal/figures"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/runner"
)

// RW is what a read/write lock run achieved.
type RW struct {
	Reads  int64 `json:"reads"`
	Writes int64 `json:"writes"`
	// Reader concurrency: the most read holds of one path in at once, and
	// the mean number in at once while at least one is (time-weighted).
	ReadersMax  int     `json:"readers_max"`
	ReadersMean float64 `json:"readers_mean"`
	// Acquire latencies of reads and of writes (the writer wait), in µs.
	ReadLatencyUS  figures.Latency `json:"read_latency_us"`
	WriteLatencyUS figures.Latency `json:"write_latency_us"`
}

// Sem is what a semaphore run achieved.
type Sem struct {
	Leases  int `json:"leases"`
	Permits int `json:"permits_per_hold"`
	// The most permits of one path in use at once, the time-weighted mean
	// in use per path over the run, and that mean over Leases.
	PermitsMax  int     `json:"permits_max"`
	PermitsMean float64 `json:"permits_mean"`
	Utilization float64 `json:"lease_utilization"`
}

// recipeFigures fills in r's read/write or semaphore figures from the
// checked holds of run.
func recipeFigures(r *Impl, run *runner.Run, cfg runner.Config) {
	r.Recipe = cfg.Recipe
	switch cfg.Recipe {
	case proto.RW:
		rw := &RW{
			ReadLatencyUS:  figures.Summarize(slices.Clone(run.ReadLatencies)),
			WriteLatencyUS: figures.Summarize(slices.Clone(run.WriteLatencies)),
		}
		var reads []exclusion.Hold
		for _, h := range inWindow(run) {
			switch {
			case h.Exit == 0:
			case h.Shared:
				rw.Reads++
				reads = append(reads, h)
			default:
				rw.Writes++
			}
		}
		c := concurrency(reads)
		rw.ReadersMax = c.peak
		if c.busy > 0 {
			rw.ReadersMean = c.weighted / c.busy
		}
		r.RW = rw
	case proto.Semaphore:
		sem := &Sem{Leases: cfg.Leases, Permits: cfg.Permits}
		c := concurrency(inWindow(run))
		sem.PermitsMax = c.peak
		if c.span > 0 && cfg.Paths > 0 {
			sem.PermitsMean = c.weighted / c.span / float64(cfg.Paths)
			sem.Utilization = sem.PermitsMean / float64(cfg.Leases)
		}
		r.Sem = sem
	}
}

// inWindow are the holds of run entered inside its measured window: the
// recipe's figures are counted over them, as the acquisitions are.
func inWindow(run *runner.Run) []exclusion.Hold {
	var out []exclusion.Hold
	for _, h := range run.Holds {
		if run.Window.Contains(h.Enter) {
			out = append(out, h)
		}
	}
	return out
}

// occupancy is what a sweep over holds found: the most permits (or holds)
// in at once on one path; the integral over time of those in, summed over
// paths (permit-ns); the time at least one was in, summed over paths; and
// the span from the first enter to the last exit.
type occupancy struct {
	peak           int
	weighted, busy float64
	span           float64
}

// concurrency sweeps the complete holds of each path (a hold counts its
// permits, at least one; intervals are half-open).
func concurrency(holds []exclusion.Hold) occupancy {
	type event struct {
		at    int64
		path  int32
		delta int
	}
	var evs []event
	var first, last int64
	for _, h := range holds {
		if h.Exit == 0 || h.Exit < h.Enter {
			continue
		}
		k := max(1, int(h.Permits))
		evs = append(evs, event{h.Enter, h.Path, k}, event{h.Exit, h.Path, -k})
		if first == 0 || h.Enter < first {
			first = h.Enter
		}
		last = max(last, h.Exit)
	}
	// By path, then time; at one time exits before enters.
	slices.SortFunc(evs, func(a, b event) int {
		return cmp.Or(cmp.Compare(a.path, b.path), cmp.Compare(a.at, b.at), cmp.Compare(a.delta, b.delta))
	})
	o := occupancy{span: float64(last - first)}
	in := 0
	for i, e := range evs {
		if i > 0 && evs[i-1].path == e.path && in > 0 {
			d := float64(e.at - evs[i-1].at)
			o.weighted += float64(in) * d
			o.busy += d
		}
		in += e.delta
		o.peak = max(o.peak, in)
	}
	return o
}

// recipeHeader and recipeRows give the table of a read/write lock or
// semaphore run's own figures (nil for a mutex run), printed after the
// comparison and shown in the HTML report.
func recipeHeader(recipe proto.Recipe) []string {
	switch recipe {
	case proto.RW:
		return []string{"impl", "reads", "writes", "readers max", "readers mean",
			"read p50", "read p99", "write p50", "write p99", "write max"}
	case proto.Semaphore:
		return []string{"impl", "holds", "permits/hold", "leases", "permits max", "permits mean", "lease utilization"}
	}
	return nil
}

func recipeRows(results []Impl) [][]string {
	var rows [][]string
	for _, r := range results {
		switch {
		case r.RW != nil:
			rw := r.RW
			rows = append(rows, []string{string(r.Impl), fmt.Sprint(rw.Reads), fmt.Sprint(rw.Writes),
				fmt.Sprint(rw.ReadersMax), fmt.Sprintf("%.2f", rw.ReadersMean),
				micros(rw.ReadLatencyUS.P50), micros(rw.ReadLatencyUS.P99),
				micros(rw.WriteLatencyUS.P50), micros(rw.WriteLatencyUS.P99), micros(rw.WriteLatencyUS.Max)})
		case r.Sem != nil:
			s := r.Sem
			rows = append(rows, []string{string(r.Impl), fmt.Sprint(r.Acquisitions), fmt.Sprint(s.Permits),
				fmt.Sprint(s.Leases), fmt.Sprint(s.PermitsMax), fmt.Sprintf("%.2f", s.PermitsMean),
				fmt.Sprintf("%.1f%%", 100*s.Utilization)})
		}
	}
	return rows
}

// PrintRecipe writes the read/write lock or semaphore figures of a run of
// those recipes (nothing for a mutex run).
func PrintRecipe(w io.Writer, cfg runner.Config, results []Impl) {
	header := recipeHeader(cfg.Recipe)
	if header == nil {
		return
	}
	fmt.Fprintln(w)
	printNote(w, "", "", recipeNote(cfg))
	printAligned(w, append([][]string{header}, recipeRows(results)...))
}

// recipeNote says what the recipe table shows.
func recipeNote(cfg runner.Config) string {
	if cfg.Recipe == proto.RW {
		return fmt.Sprintf("Read/write lock, %.0f%% reads: readers in at once on a path (max; mean while any is in), "+
			"acquire latency of reads and of writes (the writer wait).", 100*cfg.Readers)
	}
	return fmt.Sprintf("Semaphore of %d leases, %d permit(s) a hold: permits in use at once on a path (max; mean over "+
		"the measured window), lease utilization = mean in use / leases.", cfg.Leases, cfg.Permits)
}

// recipeSetting describes the recipe of a run for the report's settings.
func recipeSetting(cfg runner.Config) string {
	switch cfg.Recipe {
	case proto.RW:
		return fmt.Sprintf("read/write lock, %.0f%% reads", 100*cfg.Readers)
	case proto.Semaphore:
		return fmt.Sprintf("semaphore of %d leases, %d permit(s) a hold", cfg.Leases, cfg.Permits)
	case proto.Multi:
		return fmt.Sprintf("multi-lock of %d mutexes a hold (acquisitions count member holds)", cfg.Members)
	}
	return "mutex"
}
