package runner

import (
	"context"
	"time"

	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/stress/internal/fault"
	"github.com/tierlock/tierlock/stress/internal/fleet"
	"github.com/tierlock/tierlock/stress/internal/progress"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/sample"
)

// drive starts the ready workers together, lets them run (injecting faults
// with -fault), samples the lock paths meanwhile and reads the servers at
// the edges of the measured window.
func (r *Runner) drive(ctx context.Context, run *Run, f *fleet.Fleet, newTask func(proc, slot int) proto.Task, res *resources) error {
	cfg := r.cfg
	paths := sampled(cfg.Recipe, run.Paths)
	if run.Name == proto.Redsync {
		paths = nil // its locks are Redis keys: no znodes or watches to count
	}
	smp := sample.Start(r.conn, r.cluster, paths, cfg.Sample)
	length := cfg.warmup() + cfg.Duration
	bar := progress.New(r.stderr, r.showBar, string(run.Name), length, cfg.Acquisitions)
	counts := map[int]int64{} // by process: a replacement's count adds to its predecessor's
	onProgress := func(m fleet.Msg) {
		if m.Type == proto.Progress {
			counts[m.Proc] = m.N
			var sum int64
			for _, n := range counts {
				sum += n
			}
			bar.Update(sum)
		}
	}
	e := &edges{cluster: r.cluster, redis: r.redisEdges(run.Name), smp: smp}
	run.Start = exclusion.Now()
	win := &run.Window
	if cfg.Windowed() {
		win.Start = run.Start + int64(cfg.warmup())
		win.End = win.Start + int64(cfg.Duration)
		e.watch(win.Start, win.End)
	} else {
		win.Start, win.Whole = run.Start, true
		e.from = e.read()
	}
	start := time.Now()
	f.Broadcast(proto.GoAt(run.Start))
	var interrupted bool
	var err error
	if cfg.Faults != nil {
		var out fault.Outcome
		out, interrupted, err = fault.Drive(ctx, string(run.Name), run.Start, start, cfg.faultSettings(),
			res.target(fault.Target{Cluster: r.cluster, Proxies: r.proxies, Fleet: f, NewTask: newTask}), onProgress)
		run.Faults, run.Killed, run.Paused, run.CountersOff = out.Events, out.Killed, out.Paused, out.CountersOff
		run.Losses, run.Expiries = out.Losses, out.Expiries
	} else {
		interrupted, err = f.Await(ctx, proto.Done, cfg.Timeout, onProgress)
	}
	run.Elapsed = time.Since(start)
	bar.Finish()
	if win.Whole {
		e.to = e.read()
		win.End = exclusion.Now()
	} else {
		e.finish()
		win.End = min(win.End, exclusion.Now())
	}
	run.PeakZnodes, run.PeakWatches, _ = smp.Finish()
	if err != nil {
		return err
	}
	run.Interrupted = interrupted
	run.Requests = e.requests(r.cluster.Size())
	if run.CountersOff {
		run.Requests = -1
	}
	win.Requests, win.ServerCPU, win.Host = run.Requests, e.serverCPU(), e.host()
	win.ServerFrom, win.ServerTo = e.from.at, e.to.at
	return nil
}
