package runonce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierlock/tierlock/zklock"
)

// The names below a job's node (root/<job>): the lock's path and the run
// node.
const (
	lockName = "lock"
	runName  = "run"
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

	out         outage       // ZooKeeper's unavailability, logged in two lines
	heard       heard        // when ZooKeeper last answered
	late        lateness     // how late this instance is
	over        overload     // an overload, told in two lines
	clock       serverClock  // the server's clock as this instance's writes saw it
	sessionGone sync.Once    // a Claim on a closed session, told (report.go)
	stales      tally        // stale ticks skipped (tick.go)
	unknowns    tally        // named ticks the record cannot tell run (tick.go)
	toldClocks  atomic.Int32 // the hosts' clocks told to differ: 1, by more than the record keeps: 2 (tick.go)

	mu     sync.Mutex
	jobs   map[string]*job
	closed bool
	claims sync.WaitGroup // claims that may write (close.go)

	rootMu   sync.Mutex // held while the root is made (rootReady)
	rootMade bool
}

// job is the Runner's state for one job key.
type job struct {
	key     string
	lock    *zklock.Lock
	runPath string
	window  time.Duration
	busy    atomic.Bool             // a Claim of this process holds or takes the lock, or RemoveJob does
	wrote   atomic.Bool             // this Runner wrote the job's record (tick.go)
	removal atomic.Pointer[removal] // a RemoveJob under way (remove.go)
	retired atomic.Bool             // removed: a Claim takes a new entry
	run     atomic.Pointer[Claim]   // the run going on, set by Claim, cleared by Release

	ownNode  string      // the name of this process's last hold's lock node (lost.go), under busy
	lastName int64       // the tick this process last claimed (tick.go), under busy
	held     heldEpisode // ticks lost to the lock held elsewhere (lost.go), under busy

	calls    atomic.Int64 // Claim calls
	warnedAt atomic.Int64 // the last failure warned of (Unix ns)
	checks   checks       // envelope.go
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
	r := &Runner{s: s, root: root, cfg: cfg, by: cfg.name, log: cfg.log, jobs: map[string]*job{}}
	r.heard.born = time.Now()
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
	return r.claim(ctx, key, time.Time{}, 0)
}

// claim is Claim, and ClaimTick with a tick (not zero), and ClaimEvery
// with a period too.
func (r *Runner) claim(ctx context.Context, key string, tick time.Time, every time.Duration) (*Claim, error) {
	entry := time.Now() // the timer's firing, as near as the Runner knows it
	if r == nil {
		return nil, ErrNil
	}
	if ctx == nil {
		return nil, ErrNilContext
	}
	j, err := r.job(key)
	if err != nil {
		return nil, err
	}
	calls := j.calls.Add(1)
	p := &probe{entry: entry, tick: tick, every: every}
	if j, err = r.own(j, key); err != nil {
		if j != nil {
			r.report(ctx, j, p, err)
		}
		return nil, err
	}
	r.named(j, p)
	lockCtx, cancel := context.WithTimeout(ctx, r.cfg.timeout)
	defer cancel()
	defer r.leave(p)
	h, d, err := r.take(lockCtx, j, p)
	if d.decided || d.local || errors.Is(err, ErrLockHeld) {
		r.reached() // ZooKeeper answered
	}
	if d.decided || d.local {
		r.checkEnvelope(j, d, calls, p)
	}
	if err != nil {
		err = r.afterStall(ctx, j, p, r.sessionClosedErr(err))
		j.busy.Store(false)
		r.report(ctx, j, p, err)
		return nil, err
	}
	if p.name != 0 {
		r.unknowns.end(r, ticksKnown, "ticks_unknown")
	}
	return r.started(ctx, j, p, h), nil
}

// started makes the Claim of the run of j that h holds, and tells it.
func (r *Runner) started(ctx context.Context, j *job, p *probe, h *zklock.Hold) *Claim {
	if testHookAfterTake != nil {
		testHookAfterTake()
	}
	c := &Claim{r: r, j: j, hold: h, tick: p.tick, entry: p.entry}
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
	c.latency = r.report(ctx, j, p, nil)
	return c
}

// own takes j's busy flag for a Claim, or says why not: a run of this
// instance still going, or its RemoveJob (which the removal notes). A job
// removed meanwhile is taken anew.
func (r *Runner) own(j *job, key string) (*job, error) {
	for {
		if j.busy.CompareAndSwap(false, true) {
			if !j.retired.Load() {
				return j, nil
			}
			j.busy.Store(false)
			var err error
			if j, err = r.job(key); err != nil {
				return nil, err
			}
			continue
		}
		if rm := j.removal.Load(); rm != nil {
			rm.attempted()
			return j, fmt.Errorf("%w: job %q: by this instance's RemoveJob (the tick is lost)", ErrLockHeld, key)
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

// job returns the state of key, making it on first use.
func (r *Runner) job(key string) (*job, error) {
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
		zklock.WithLabel(r.label()), zklock.WithPersistentPath())
	if err != nil {
		return nil, fmt.Errorf("runonce: job %q: %w", key, err)
	}
	j.lock = lock
	return j, nil
}
