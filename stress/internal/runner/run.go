package runner

import (
	"context"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"time"

	"github.com/tierlock/tierlock/internal/peers"
	"github.com/tierlock/tierlock/stress/internal/fleet"
	"github.com/tierlock/tierlock/stress/internal/proto"
)

// defaultRecordCap is how many holds a worker can record in a timed run;
// the record file is sparse, so unused room costs nothing.
const defaultRecordCap = 1 << 23

// RunImpl runs one implementation (or a mix): P workers, started together,
// checked.
func (r *Runner) RunImpl(ctx context.Context, name proto.Impl) (*Run, error) {
	cfg := r.cfg
	base := path.Join(r.root, string(name))
	run := &Run{Name: name, Paths: proto.LockPaths(base, cfg.Paths)}
	if err := r.makeLockPaths(name, run.Paths); err != nil {
		return nil, err
	}
	defer deleteTree(r.conn, base)

	var passthrough io.Writer
	if cfg.Verbose {
		passthrough = r.stderr
	}
	wr, err := r.startResources(name, base)
	if err != nil {
		return nil, err
	}
	defer wr.close()
	f := fleet.New(r.exe, passthrough)
	defer f.Shutdown(true)
	var files []string
	// newTask describes worker proc (a process; a replacement of a killed
	// worker is a new process in its predecessor's slot).
	newTask := func(proc, slot int) proto.Task {
		file := filepath.Join(r.tmp, fmt.Sprintf("%s-%d.rec", name, proc))
		files = append(files, file)
		run.SlotOf = append(run.SlotOf, slot)
		task := proto.Task{
			Impl: cfg.ImplOf(name, slot), Proc: proc, Slot: slot, Procs: cfg.Procs, Goroutines: cfg.Goroutines,
			PathBase: base, NPaths: cfg.Paths,
			Duration: cfg.Duration, Warmup: cfg.warmup(), Acquisitions: cfg.Acquisitions, Hold: cfg.Hold, HoldMode: cfg.HoldMode, Pick: cfg.Pick,
			HandoffMax: cfg.HandoffMax, HandoffMaxHold: cfg.HandoffMaxHold,
			Servers: r.workerServers(slot), Redis: r.redisAddr(name), SessionTimeout: cfg.SessionTimeout, ConnectTimeout: cfg.ConnectTimeout,
			RecordFile: file, RecordCap: defaultRecordCap, Seed: uint64(time.Now().UnixNano()),
			Verbose: cfg.Verbose, Faults: cfg.Faults != nil,
			Recipe: cfg.Recipe, Readers: cfg.Readers, Leases: cfg.Leases, Permits: cfg.Permits,
			Metrics: cfg.MetricsAddr(slot),
			Members: cfg.Members,
			Fence:   wr.fenceAddr(), Guard: wr.guard,
		}
		if cfg.Faults != nil {
			// The parent ends a run with faults (it may extend it until the
			// last fault is recovered from); the duration is a safety net.
			task.Duration = cfg.Timeout
		}
		if cfg.Acquisitions > 0 {
			// Each goroutine's quota is at most total/(P*G) + 1; a
			// multi-lock hold records each of its members, so its last
			// hold can pass the quota by Members-1.
			task.RecordCap = int64(cfg.Goroutines) * (cfg.Acquisitions/int64(cfg.Procs*cfg.Goroutines) + int64(max(1, cfg.Members)))
		}
		return task
	}
	if err := r.preparePeers(ctx, name); err != nil {
		return nil, err
	}

	if cfg.Metrics != "" {
		fmt.Fprintf(r.stderr, "stress: %s: workers' metrics at http://%s/metrics ... http://%s/metrics (slot 0 to %d)\n",
			name, cfg.MetricsAddr(0), cfg.MetricsAddr(cfg.Procs-1), cfg.Procs-1)
	}
	for i := range cfg.Procs {
		if _, err := f.Start(func(proc int) proto.Task { return newTask(proc, i) }); err != nil {
			return nil, fmt.Errorf("%w: %w", fleet.ErrRun, err)
		}
	}

	// All workers connect and make their locks before any starts.
	if _, err := f.Await(ctx, proto.Ready, cfg.ConnectTimeout+30*time.Second, nil); err != nil {
		return nil, err
	}
	if err := r.drive(ctx, run, f, newTask, wr); err != nil {
		return nil, err
	}

	f.Broadcast(proto.Exit)
	results := make([]*proto.Result, f.Size())
	if _, err := f.Await(context.Background(), proto.ResultMsg, 30*time.Second, func(m fleet.Msg) {
		if m.Type == proto.ResultMsg {
			results[m.Proc] = m.Result
		}
	}); err != nil {
		return nil, err
	}
	f.Shutdown(false)
	run.Writes = wr.check(results, run.Paused)
	run.Orphans = r.orphans(base)
	run.Limits = r.limitsAfter(ctx, name, base)
	return run, r.collect(run, results, files)
}

// makeLockPaths makes the lock paths of run name's ZooKeeper locks;
// redsync's are Redis keys, which its SET makes.
func (r *Runner) makeLockPaths(name proto.Impl, paths []string) error {
	if name == proto.Redsync {
		return nil
	}
	return r.makePaths(paths)
}

// limitsAfter probes the limits on the same servers, warm from run name,
// right after it, once its sessions have ended: nothing else runs (nil
// without -probe). They are ZooKeeper's: none for redsync, which does not
// run on it.
func (r *Runner) limitsAfter(ctx context.Context, name proto.Impl, base string) *Limits {
	if r.cfg.Probe <= 0 || name == proto.Redsync {
		return nil
	}
	return r.probe(ctx, base+"/probe", r.cfg.Probe)
}

// preparePeers compiles the Java peer (and writes the Python one) once,
// before the workers of a mixed run or of a curator run start, into the
// run's directory.
func (r *Runner) preparePeers(ctx context.Context, name proto.Impl) error {
	var kinds []proto.Impl
	switch name {
	case proto.Mix:
		for _, m := range r.cfg.Mix {
			kinds = append(kinds, m.Impl)
		}
	case proto.Curator, proto.Kazoo:
		kinds = append(kinds, name)
	}
	for _, k := range kinds {
		if k != proto.Curator && k != proto.Kazoo {
			continue
		}
		if _, err := peers.Command(ctx, peers.Kind(k), r.tmp, "prepare"); err != nil {
			return fmt.Errorf("%w: %s: %w", fleet.ErrRun, k, err)
		}
	}
	return nil
}

// sampled are the paths whose children and watches are sampled: the lock
// paths, or for a semaphore their lease directories (Curator's layout:
// the lease nodes are children of <path>/leases).
func sampled(recipe proto.Recipe, paths []string) []string {
	if recipe != proto.Semaphore {
		return paths
	}
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = p + "/leases"
	}
	return out
}
