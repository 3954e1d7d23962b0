package runner

import (
	"fmt"
	"os"
	"time"

	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/internal/linear"
	"github.com/tierlock/tierlock/stress/internal/fault"
	"github.com/tierlock/tierlock/stress/internal/fleet"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/record"
)

// orphans lists the ephemeral nodes left under base once every worker has
// exited: none may be, once their sessions are closed. A killed worker's
// session ends only when the server expires it, so this waits up to the
// session timeout + 5s for the list to empty.
func (r *Runner) orphans(base string) []string {
	deadline := time.Now().Add(r.cfg.SessionTimeout + 5*time.Second)
	for {
		left := r.ephemerals(base)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// collect reads the workers' results and records and checks them. Every
// hold is checked; acquisitions, latencies and hold times are counted from
// the holds entered inside the measured window (Window), by worker slot: a
// killed worker's and its replacement's add up.
func (r *Runner) collect(run *Run, results []*proto.Result, files []string) error {
	g := r.cfg.Goroutines
	run.PerProc = make([]int64, r.cfg.Procs)
	run.PerG = make([]int64, r.cfg.Procs*g)
	run.Window.Workers = make([]*proto.Window, len(results))
	run.Window.WorkerGrants = make([]int64, len(results))
	var counted, complete int64
	for p, res := range results {
		if _, killed := run.Killed[int32(p)]; killed {
			continue // its holds are counted from its records below
		}
		if res == nil {
			return fmt.Errorf("%w: worker %d sent no result", fleet.ErrRun, p)
		}
		for _, n := range res.PerGoroutine {
			counted += n
		}
		run.Errors += res.Errors
		run.ErrSamples = append(run.ErrSamples, res.ErrorSamples...)
		run.Overflow = run.Overflow || res.Overflow
		run.TokenKind = res.TokenKind
		run.Losses += res.Losses
		run.Expiries += res.Expiries
		run.Window.Abandoned += res.Abandoned
		run.Window.Workers[p] = res.Window
	}
	for p, file := range files {
		recs, err := record.Read(file)
		if err != nil {
			return fmt.Errorf("%w: records of worker %d: %w", fleet.ErrRun, p, err)
		}
		os.Remove(file)
		_, killed := run.Killed[int32(p)]
		for _, h := range recs {
			run.Holds = append(run.Holds, exclusion.Hold{
				Proc: int32(p), G: h.G, Path: h.Path, Token: h.Token, Enter: h.Enter, Exit: h.Exit, Loss: h.Lost,
				Shared: h.Kind.Shared, Permits: h.Kind.Permits,
			})
			if h.Exit != 0 && !killed {
				complete++
			}
			r.count(run, run.SlotOf[p], h)
			countRead(&run.Window, p, h)
		}
	}
	if complete != counted {
		run.Errors++
		run.ErrSamples = append(run.ErrSamples,
			fmt.Sprintf("workers counted %d acquisitions but recorded %d complete holds", counted, complete))
	}
	opt := exclusion.Options{
		Tokens:          run.TokenKind != "" && run.Name != proto.Mix, // a mix's tokens are of different kinds
		SameNodeHandoff: run.Name == proto.TierHandoff,
		Killed:          run.Killed,
		Paused:          run.Paused,
		Permits:         r.cfg.semaphoreSize(),
	}
	run.Result = exclusion.Check(run.Holds, opt)
	// The same holds, cut where Check cut them, and the fenced store's
	// writes, through Porcupine.
	admitted, refused := run.Writes.fenceLog()
	run.Porcupine = linear.Check(linear.History{Holds: run.Holds, Admitted: admitted, Refused: refused},
		linear.Options{Tokens: opt.Tokens, SameNodeHandoff: opt.SameNodeHandoff, Permits: opt.Permits})
	fault.MeasureRecovery(run.Faults, run.Holds, run.Start, r.cfg.SessionTimeout)
	return nil
}

// countRead counts hold h of process p, if complete, in the intervals the
// counters were really read over: the servers', and its worker's own.
func countRead(w *Window, p int, h record.Hold) {
	if h.Exit == 0 {
		return
	}
	if h.Enter >= w.ServerFrom && h.Enter <= w.ServerTo {
		w.ServerGrants++
	}
	if p < len(w.Workers) && w.Workers[p] != nil && h.Enter >= w.Workers[p].Start && h.Enter <= w.Workers[p].End {
		w.WorkerGrants[p]++
	}
}

// count counts hold h of the worker in slot where it falls: before, inside
// or after the window. Inside, its acquire latency counts (whether or not
// it was left: a hold cut by a kill waited as long) and, if it was left,
// the acquisition and its length.
func (r *Runner) count(run *Run, slot int, h record.Hold) {
	w := &run.Window
	switch {
	case h.Enter < w.Start:
		if h.Exit != 0 {
			w.Before++
		}
		return
	case h.Enter > w.End:
		if h.Exit != 0 {
			w.After++
		}
		return
	}
	run.Latencies = append(run.Latencies, h.Latency)
	if r.cfg.Recipe == proto.RW {
		if h.Kind.Shared {
			run.ReadLatencies = append(run.ReadLatencies, h.Latency)
		} else {
			run.WriteLatencies = append(run.WriteLatencies, h.Latency)
		}
	}
	if h.Exit == 0 {
		return
	}
	w.In++
	run.HoldTimes = append(run.HoldTimes, h.Exit-h.Enter)
	run.PerProc[slot]++
	if g := r.cfg.Goroutines; h.G >= 0 && int(h.G) < g {
		run.PerG[slot*g+int(h.G)]++
	}
}
