package matrix

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tierlock/tierlock/stress/internal/cells"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/report"
	"github.com/tierlock/tierlock/stress/internal/results"
	"github.com/tierlock/tierlock/stress/internal/runner"
)

// Summary is a matrix's JSON file: the plan, every cell run so far, and
// their summary per point.
type Summary struct {
	Started  time.Time     `json:"started"`
	Spec     cells.Spec    `json:"spec"`
	Impls    []proto.Impl  `json:"impls"`
	Base     runner.Config `json:"base_config"`
	Results  []Result      `json:"results"`
	Points   []Point       `json:"points"`
	Cells    int           `json:"cells"` // in the plan
	Complete bool          `json:"complete"`
	OK       bool          `json:"ok"`
	Failures []string      `json:"failures,omitempty"`
}

var errNoFile = errors.New("no file")

// load reads a previous run's JSON file.
func load(path string) (*Summary, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || err == nil && len(b) == 0 {
		return nil, errNoFile
	}
	if err != nil {
		return nil, err
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: not a matrix file: %w", path, err)
	}
	return &s, nil
}

// resume takes over the cells of the file at path that ran to their end,
// failed checks included (a finding, not a cell to run again); cells that
// could not be run or were cut short run again. It returns their keys. A
// missing or empty file is a matrix not begun.
func (s *Summary) resume(path string) (map[string]bool, error) {
	done := map[string]bool{}
	prev, err := load(path)
	switch {
	case errors.Is(err, errNoFile):
		return done, nil
	case err != nil:
		return nil, err
	}
	if why := prev.compatible(s); why != "" {
		return nil, fmt.Errorf("%s: %s; move it away or drop -matrix-resume", path, why)
	}
	for _, r := range prev.Results {
		if r.Error == "" && r.complete() {
			s.Results = append(s.Results, r)
			done[r.Key] = true
		}
	}
	return done, nil
}

// compatible says why prev's cells cannot be taken into cur ("": they can):
// the same implementations, run for as long, with the same critical
// section and hand-off settings.
func (prev *Summary) compatible(cur *Summary) string {
	switch {
	case !slices.Equal(prev.Impls, cur.Impls):
		return fmt.Sprintf("it has implementations %v, not %v", prev.Impls, cur.Impls)
	case prev.Spec.Duration != cur.Spec.Duration:
		return fmt.Sprintf("its cells ran %v each, not %v", prev.Spec.Duration, cur.Spec.Duration)
	case prev.Spec.RunWarmup != cur.Spec.RunWarmup:
		return fmt.Sprintf("its runs were measured after a warm-up of %v, not %v", prev.Spec.RunWarmup, cur.Spec.RunWarmup)
	case prev.Base.HoldMode != cur.Base.HoldMode || prev.Base.HandoffMax != cur.Base.HandoffMax ||
		prev.Base.HandoffMaxHold != cur.Base.HandoffMaxHold || prev.Base.SessionTimeout != cur.Base.SessionTimeout:
		return "its hold mode, hand-off bounds or session timeout differ"
	}
	return ""
}

// finish computes the points and the verdict over the results so far.
func (s *Summary) finish(planned int, interrupted bool) {
	s.Cells = planned
	s.Points = points(s.Spec, s.Impls, s.Results)
	s.Failures = nil
	ran := 0
	for _, r := range s.Results {
		switch {
		case r.Error != "":
			s.Failures = append(s.Failures, fmt.Sprintf("%s: not run: %s", r.Key, r.Error))
		case !r.complete():
			s.Failures = append(s.Failures, fmt.Sprintf("%s: interrupted", r.Key))
		default:
			ran++
		}
		for _, f := range r.Impls {
			if !f.OK {
				s.Failures = append(s.Failures, fmt.Sprintf("%s: %s: %s", r.Key, f.Impl, f.Verdict))
			}
		}
	}
	s.Complete = ran == planned && !interrupted
	if !s.Complete && len(s.Results) < planned {
		s.Failures = append(s.Failures, fmt.Sprintf("%d of %d cells ran", ran, planned))
	}
	s.OK = s.Complete && len(s.Failures) == 0
}

// violated reports whether some implementation failed the checker (a run
// cut short is incomplete, not failed).
func (s *Summary) violated() bool {
	for _, r := range s.Results {
		for _, f := range r.Impls {
			if !f.OK && !f.Interrupted {
				return true
			}
		}
	}
	return false
}

// save writes the JSON file and the report as they stand (finish first), each through a
// temporary file renamed into place, so that an interrupted matrix leaves
// the last complete version. Errors are said on stderr: a matrix left to
// run does not stop for a full disk in its report.
func (s *Summary) save(stderr io.Writer) {
	if s.Base.JSON != "" {
		if err := writeAtomic(s.Base.JSON, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(s)
		}); err != nil {
			fmt.Fprintln(stderr, "stress: -json:", err)
		}
	}
	if s.Base.Report != "" {
		if err := writeAtomic(s.Base.Report, func(w io.Writer) error { return report.WriteMatrix(w, reportData(s)) }); err != nil {
			fmt.Fprintln(stderr, "stress: -report:", err)
		}
	}
}

func writeAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after the rename: nothing
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// printTable writes the per-point table, split to fit results.Width and
// keyed by the point and implementation; what each implementation is; the
// warnings against reading too much into it; and the verdict.
func printTable(w io.Writer, s *Summary) {
	results.Table{Rows: append([][]string{tableHeader}, tableRows(s)...), Keys: tableKeys}.Print(w)
	fmt.Fprintln(w)
	results.PrintLegend(w, s.Impls, s.Base.Recipe)
	results.PrintWarnings(w, warnings(s))
	fmt.Fprintln(w, verdict(s))
	for _, f := range s.Failures {
		fmt.Fprintln(w, "  "+f)
	}
}

// reportData is the matrix's report: a heat map per topology and
// implementation (rows: processes × goroutines, columns: paths and
// critical section; value: the median throughput ratio to gozk).
func reportData(s *Summary) report.MatrixData {
	d := report.MatrixData{
		Title:     fmt.Sprintf("tierlock stress matrix (%s): %s against gozk", s.Spec.Preset, joinImpls(s.Impls)),
		Generated: time.Now().UTC(),
		OK:        s.OK, Violated: violations(s) > 0, Verdict: verdict(s), Failures: s.Failures,
		Header: tableHeader, Rows: tableRows(s),
		MapNote: "Each cell: the implementation's acquisitions per second over per-goroutine zk.Lock's (gozk) in the same " +
			"cell and run, the median over the cell's repetitions (with its range when repeated). Green: ahead, red: behind, " +
			"grey: not run. Rows: worker processes × goroutines each; columns: lock paths and critical section.",
		TableNote: "Medians over a point's repetitions, every figure counted inside the measured window (holds entered in it; " +
			"requests and CPU read at its edges). of chain: throughput over the hand-off chain probed on the same servers after " +
			"the run; client / server CPU µs: the workers' / the servers' processor time per acquisition (n/a: servers stress did " +
			"not start); gor/proc: the most goroutines of one worker process; create … sync: requests the workers wrote per " +
			"acquisition, by kind; lease w/l: grants that waited on the lease / lapses; after: holds entered after the window " +
			"(a drain); abandoned: waits given up at the deadline; timeout: the session timeout the servers granted. " +
			"req/acq: requests the servers received (pings included) per acquisition; " +
			"znodes/path and watches/path: the peak sampled under the busiest lock path; Σ watches: the sum of the paths' peaks; " +
			"jain gor: Jain's index of acquisitions over goroutines (1 = equal); min/max share: the fewest and most acquisitions " +
			"of one goroutine over the mean; check: the independent checker (mutual exclusion, fencing tokens, errors).",
		Settings: [][2]string{
			{"plan", fmt.Sprintf("%s: servers %v, processes %v, goroutines %v, paths %v, holds %v, repeat %d",
				s.Spec.Preset, s.Spec.Topologies, s.Spec.Procs, s.Spec.Goroutines, s.Spec.Paths, s.Spec.Holds, s.Spec.Repeat)},
			{"run per implementation and cell", fmt.Sprintf("%v measured after a %v warm-up (holds entered in the window count; "+
				"requests and CPU read at its edges); limits probed for %v each after each run", s.Spec.Duration, s.Spec.RunWarmup, s.Spec.Probe)},
			{"hold mode", s.Base.HoldMode},
			{"hand-off bounds", fmt.Sprintf("%d hand-offs, %v", s.Base.HandoffMax, s.Base.HandoffMaxHold)},
			{"session timeout", fmt.Sprintf("%v asked; granted: %s", s.Base.SessionTimeout, grantedTimeouts(s))},
			{"started", s.Started.Format(time.RFC3339)},
		},
	}
	d.TableNote = results.WithRedsyncNote(d.TableNote, s.Impls)
	done := 0
	for _, r := range s.Results {
		if r.Error == "" && r.complete() {
			done++
		}
	}
	if !s.Complete {
		d.Progress = fmt.Sprintf("%d of %d cells", done, s.Cells)
	}
	var rows, cols []string
	for _, c := range s.Spec.Cells() {
		if !slices.Contains(rows, c.Shape()) {
			rows = append(rows, c.Shape())
		}
		if !slices.Contains(cols, c.Load()) {
			cols = append(cols, c.Load())
		}
	}
	for _, topo := range s.Spec.Topologies {
		for _, im := range s.Impls {
			if im != proto.Gozk {
				d.Maps = append(d.Maps, heatMap(s, topo, im, rows, cols))
			}
		}
	}
	return d
}

// heatMap is im's map on topo: its throughput ratio to gozk at each point,
// NaN where none ran.
func heatMap(s *Summary, topo cells.Topology, im proto.Impl, rows, cols []string) report.HeatMap {
	h := report.HeatMap{Title: fmt.Sprintf("%s, %s: throughput vs gozk", im, topo), Rows: rows, Cols: cols}
	h.Values = make([][]float64, len(rows))
	h.Labels = make([][]string, len(rows))
	for i := range rows {
		h.Values[i] = make([]float64, len(cols))
		h.Labels[i] = make([]string, len(cols))
		for j := range cols {
			h.Values[i][j] = math.NaN()
		}
	}
	for _, p := range s.Points {
		if p.Cell.Topology != topo {
			continue
		}
		k := slices.IndexFunc(p.Impls, func(f PointImpl) bool { return f.Impl == im })
		if k < 0 {
			continue
		}
		f := p.Impls[k]
		i, j := slices.Index(rows, p.Cell.Shape()), slices.Index(cols, p.Cell.Load())
		h.Values[i][j] = f.Ratio
		if p.Runs > 1 && f.Ratio > 0 {
			h.Labels[i][j] = fmt.Sprintf("%.2g (%.2g–%.2g)", f.Ratio, f.RatioMin, f.RatioMax)
		}
		if !f.OK {
			h.Labels[i][j] = "FAIL"
		}
	}
	return h
}

func joinImpls(impls []proto.Impl) string {
	s := make([]string, len(impls))
	for i, im := range impls {
		s[i] = string(im)
	}
	return strings.Join(s, ", ")
}
