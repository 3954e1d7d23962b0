package runonce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"sync"
	"time"

	"github.com/tierlock/tierlock/zklock"
)

// Runner is one instance's side of the rule (see the package doc): it
// decides which ticks of which jobs this instance runs, so that each tick
// of a job runs on one instance of the fleet. Make one per process and
// session with New and claim each tick with Claim or Do. It is safe for
// concurrent use.
type Runner struct {
	s    *zklock.Session
	root string
	cfg  config
	by   string
	log  *slog.Logger

	// Its parts: claims decides (claim.go, tick.go), tell tells what the
	// decisions do not (report.go), nodes makes and reads the jobs' nodes,
	// and gate holds Close until the claims that write have stored their
	// runs.
	claims claimer     // a claim: read, decide, write, lock
	tell   *reporter   // outages, overload, the envelope, ticks stale or unknown
	clock  serverClock // the server's clock as this instance's writes saw it
	nodes  store       // the jobs' nodes below the root
	gate   gate        // claims admitted to writing, until Close

	mu     sync.Mutex // held while a job's entry is looked up or made, and by Close
	jobs   map[string]*job
	closed bool // Close was called: no job entry is made, no call accepted
}

// New returns a Runner whose jobs live below root, an absolute ZooKeeper
// path of their own: root/<job>/lock is the job's zklock.Lock and
// root/<job>/run its run node, a persistent node of about 200 bytes per
// job. Every instance of a fleet must use the same root and windows. It
// logs to the session's logger (zklock.WithLogger) unless WithLogger says
// otherwise.
func New(s *zklock.Session, root string, opts ...Option) (*Runner, error) {
	if s == nil {
		return nil, ErrNilSession
	}
	if err := zklock.ValidatePath(root); err != nil {
		return nil, fmt.Errorf("runonce: root: %w", err)
	}
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	if cfg.name == "" {
		cfg.name = instanceName()
	}
	if cfg.log == nil {
		cfg.log = s.Logger().With("component", "runonce", "root", root)
	}
	r := &Runner{s: s, root: root, cfg: cfg, by: cfg.name, log: cfg.log, jobs: map[string]*job{},
		tell: newReporter(s, &cfg), nodes: store{s: s, root: root, acl: cfg.acl}}
	r.claims = claimer{s: s, nodes: &r.nodes, gate: &r.gate, tell: r.tell, clock: &r.clock,
		by: r.by, timeout: cfg.timeout, spread: cfg.spread}
	return r, nil
}

// Claim decides whether this instance runs the tick of the job named key
// whose timer just fired: it returns the Claim of the run, which holds the
// job's lock until its Release, when it does, and an error when it does
// not (ErrLockHeld, ErrAlreadyRan or ErrYielded, matching ErrSkipped, or a
// failure: the run is skipped). Call it when the tick's timer fires: the
// rule dates the tick by Claim's entry. It returns within the lock
// timeout (WithLockTimeout), or sooner when ctx ends; a claim that a
// stall of this process cut (a stop, a suspend) reads the job's record
// once more after it, within another lock timeout, to tell whether the
// fleet ran its tick (stall.go). It waits for
// another instance only when a named tick's (ClaimTick, ClaimEvery) lock
// is held by that instance's claim under way, for its write of the run
// node, by that instance's lock timeout and within its own (the tick
// unknown when its own runs out first). The run's context
// (Claim.Context) derives from ctx.
func (r *Runner) Claim(ctx context.Context, key string) (*Claim, error) {
	return r.claimKey(ctx, key, time.Time{}, 0)
}

// ClaimTick is Claim for a tick whose scheduled time the scheduler tells
// (tick, the spec's boundary as this host's clock reads it, not the
// fire's time). The rule compares the tick with the ticks of the job's
// runs, which its run node keeps (the largest eight): it runs when no
// run's tick is within the job's window of it, once per tick whatever the
// hosts' and the server's clocks and the latencies. A tick fired more than
// its window late (or 100 ms, for a shorter window) by this host's clock
// is a replay, or a tick delayed by the scheduler: skipped as stale
// (ErrStale) when the fleet ran it, run when no instance ran it, and unknown
// (ErrTickUnknown) when the record cannot show whether one did. A late tick
// of a job that has no run node is not run: it may be one of a job
// removed since.
func (r *Runner) ClaimTick(ctx context.Context, key string, tick time.Time) (*Claim, error) {
	if tick.IsZero() {
		return nil, fmt.Errorf("%w: ClaimTick with the zero time", ErrInvalidOption)
	}
	return r.claimKey(ctx, key, tick, 0)
}

// ClaimEvery is ClaimTick for a job that ticks every period from a phase
// of each instance's own (robfig/cron's "@every 10s", counted from when
// the job was added, moved by a stop): its ticks are not named alike
// across the fleet, so its window is its period, and it runs once per
// period across the fleet whatever the phases.
func (r *Runner) ClaimEvery(ctx context.Context, key string, tick time.Time, period time.Duration) (*Claim, error) {
	switch {
	case tick.IsZero():
		return nil, fmt.Errorf("%w: ClaimEvery with the zero time", ErrInvalidOption)
	case period <= 0:
		return nil, fmt.Errorf("%w: ClaimEvery with a period of %v", ErrInvalidOption, period)
	}
	return r.claimKey(ctx, key, tick, period)
}

// claimKey is Claim, and ClaimTick with a tick (not zero), and ClaimEvery
// with a period too: the job's entry, its busy flag, and the claim
// (claimer.try), told, and its run stored.
func (r *Runner) claimKey(ctx context.Context, key string, tick time.Time, every time.Duration) (*Claim, error) {
	entry := time.Now() // the timer's firing, as near as the Runner knows it
	if r == nil {
		return nil, ErrNil
	}
	if ctx == nil {
		return nil, ErrNilContext
	}
	if testHookEntered != nil {
		testHookEntered(r, key)
	}
	j, err := r.jobFor(key)
	if err != nil {
		return nil, err
	}
	calls := j.calls.Add(1)
	p := newProbe(entry, tick, every, j.window)
	if j, err = r.own(j, key); err != nil {
		if j != nil {
			r.tell.report(ctx, j, p, err)
		}
		return nil, err
	}
	lockCtx, cancel := context.WithTimeout(ctx, r.cfg.timeout)
	defer cancel()
	// Runs before cancel, and after started: a claim that entered the gate
	// leaves it once its run is stored, where Close looks (gate.go).
	defer r.gate.leave(p)
	h, err := r.claims.try(ctx, lockCtx, j, p, calls)
	if err != nil {
		j.busy.Store(false)
		r.tell.report(ctx, j, p, err)
		return nil, err
	}
	return r.started(ctx, j, p, h), nil
}

// started makes the Claim of the run of j that h holds, and tells it.
func (r *Runner) started(ctx context.Context, j *job, p *probe, h *zklock.Hold) *Claim {
	if testHookAfterTake != nil {
		testHookAfterTake()
	}
	c := &Claim{j: j, hold: h, observe: r.cfg.observe, log: r.log, tick: p.tick, entry: p.entry}
	if !p.tick.IsZero() {
		ctx = context.WithValue(ctx, tickKey{}, p.tick)
	}
	c.ctx, c.cancel = context.WithCancelCause(ctx)
	j.run.Store(c)
	// A loss or a Close between take's last look and the Store above found
	// no run to cancel or mark (the loss handler and Close read j.run):
	// look again. A hold ended by Close (zklock.Lock.Close) is a close,
	// told as Close tells a run (TestCloseBeforeTheRunIsStored).
	if err := h.Err(); err != nil {
		if errors.Is(err, zklock.ErrClosed) {
			c.closed.Store(true)
			err = errRunClosed
		}
		c.cancel(err)
	}
	c.latency = r.tell.report(ctx, j, p, nil)
	return c
}

// own takes j's busy flag for a Claim, or says why not: a run of this
// instance still going (held), a claim of it still deciding (unknown), or
// its RemoveJob (which the removal notes). A job removed meanwhile is
// taken anew.
func (r *Runner) own(j *job, key string) (*job, error) {
	for {
		if j.busy.CompareAndSwap(false, true) {
			if !j.retired.Load() {
				return j, nil
			}
			j.busy.Store(false)
			var err error
			if j, err = r.jobFor(key); err != nil {
				return nil, err
			}
			continue
		}
		if rm := j.removal.Load(); rm != nil {
			rm.attempted()
			return j, fmt.Errorf("%w: job %q: by this instance's RemoveJob (the tick is lost)", ErrLockHeld, key)
		}
		if j.run.Load() == nil {
			// A claim of this instance is deciding (it may wait up to its
			// lock timeout for another instance's write), and no run of
			// it holds the job's lock: the tick is not lost to the lock,
			// another instance may run it (TestOwnClaimUnderWayIsNotHeld).
			return j, fmt.Errorf("%w: job %q: this instance's claim of an earlier tick is still deciding, and no run of it holds the job's lock: another instance may run this tick", ErrTickUnknown, key)
		}
		return j, fmt.Errorf("%w: job %q: by a run of this instance", ErrLockHeld, key)
	}
}

// Do runs fn when this instance runs the tick of key whose timer just
// fired: it claims the tick (Claim), calls fn with the run's context
// (Claim.Context) and releases the claim when fn returns, or fails it
// when fn panics (Claim.Fail: the observer hears Failed, ErrPanicked) and
// panics on. It returns Claim's error when fn is not called (matching
// ErrSkipped when the tick is another instance's), and otherwise fn's
// error joined with Release's (an error wrapping zklock.ErrLockLost when
// the job's lock was lost during the run).
func (r *Runner) Do(ctx context.Context, key string, fn func(ctx context.Context) error) (err error) {
	if fn == nil {
		return fmt.Errorf("%w: Do with a nil func", ErrNil)
	}
	c, err := r.Claim(ctx, key)
	if err != nil {
		return err
	}
	defer c.failOnPanic()
	err = fn(c.Context())
	return errors.Join(err, c.Release())
}

// jobFor returns the state of key, making it on first use.
func (r *Runner) jobFor(key string) (*job, error) {
	dir, err := r.dir(key)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	if j := r.jobs[key]; j != nil {
		return j, nil
	}
	j, err := r.newJob(key, dir)
	if err != nil {
		return nil, err
	}
	r.jobs[key] = j
	return j, nil
}

// dir returns the path of key's node below the root.
func (r *Runner) dir(key string) (string, error) {
	name, err := nodeName(key)
	if err != nil {
		return "", err
	}
	dir := path.Join(r.root, name)
	// Escaping can triple a key: the whole path must still be one that
	// ZooKeeper takes (zklock's limit, the lock node's name included).
	if err := zklock.ValidatePath(path.Join(dir, lockName)); err != nil {
		return "", fmt.Errorf("%w: job %q below %s: %w", ErrInvalidKey, key, r.root, err)
	}
	return dir, nil
}

// newJob makes the state of key, whose node is dir; only Claim's keep it
// (r.jobs): a job entry and its lock are per job this instance schedules,
// not per key asked of LastRun or RemoveJob.
func (r *Runner) newJob(key, dir string) (*job, error) {
	window, ok := r.cfg.windows[key]
	if !ok {
		window = r.cfg.window
	}
	j := &job{key: key, runPath: path.Join(dir, runName), window: window}
	// The lock path persistent, as createRun makes it: a container (the
	// lock's default, made so when a first run takes the lock before it
	// writes the job's nodes) is reaped once empty at the server's next
	// check, and a job once a minute then made it again at every tick
	// (TestLockPathKeptBetweenTicks). RemoveJob deletes it (deleteDirs).
	lock, err := zklock.New(r.s, path.Join(dir, lockName), zklock.WithACL(r.cfg.acl), zklock.WithLossHandler(j.lost),
		zklock.WithLabel(labelOf(r.by, r.s)), zklock.WithPersistentPath())
	if err != nil {
		return nil, fmt.Errorf("runonce: job %q: %w", key, err)
	}
	j.lock = lock
	return j, nil
}

// RunContext returns the context of this instance's run of the job named
// key going on now (Claim.Context), for a job that cannot be handed its
// Claim (a scheduler's task). Called while this instance has no run of
// the job, it returns a context already cancelled, its cause wrapping
// zklock.ErrNotHeld.
func (r *Runner) RunContext(key string) context.Context {
	if r != nil {
		r.mu.Lock()
		j := r.jobs[key]
		r.mu.Unlock()
		if j != nil {
			if c := j.run.Load(); c != nil {
				return c.ctx
			}
		}
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(fmt.Errorf("runonce: job %q: no run on this instance: %w", key, zklock.ErrNotHeld))
	return ctx
}

// Observe passes e to the observer (WithObserver), if any, on the
// caller's goroutine. It is for an adapter's own refusals, made before any
// Claim (a job without a name, say), so that the observer hears of every
// tick: Claim reports its own outcomes.
func (r *Runner) Observe(e Event) {
	if r != nil && r.cfg.observe != nil {
		r.cfg.observe(e)
	}
}

// testHookAfterTake, set by tests only, runs in Claim between the lock's
// take and the run's Store.
var testHookAfterTake func()
