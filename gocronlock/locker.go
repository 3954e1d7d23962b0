package gocronlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/runrec"
	"github.com/tierlock/tierlock/zklock"
)

// The names below a job's node (root/<job>): the lock's path and the run
// node.
const (
	lockName = "lock"
	runName  = "run"
)

var (
	_ gocron.Locker = (*Locker)(nil)
	_ gocron.Lock   = (*runLock)(nil)
)

// Locker is a gocron.Locker on ZooKeeper: each tick of a job runs on one
// instance of the fleet, decided by the rule in the package doc. Make one
// per process and session with NewLocker and pass it to
// gocron.WithDistributedLocker or gocron.WithDistributedJobLocker. It is
// safe for concurrent use.
type Locker struct {
	s    *zklock.Session
	root string
	cfg  lockerConfig
	by   string
	log  *slog.Logger

	out   outage      // ZooKeeper's unavailability, logged in two lines
	heard heard       // when ZooKeeper last answered
	late  lateness    // how late this instance is
	over  overload    // an overload, told in two lines
	clock serverClock // the server's clock as this instance's writes saw it

	mu     sync.Mutex
	jobs   map[string]*job
	closed bool

	rootMu   sync.Mutex // held while the root is made (rootReady)
	rootMade bool
}

// job is the Locker's state for one job key.
type job struct {
	key     string
	lock    *zklock.Lock
	runPath string
	window  time.Duration
	busy    atomic.Bool             // a Lock of this process holds or takes the lock
	run     atomic.Pointer[runLock] // the run going on, set by Lock, cleared by Unlock

	calls    atomic.Int64 // Lock calls
	warnedAt atomic.Int64 // the last failure warned of (Unix ns)
	checks   checks       // fleetcheck.go
}

// NewLocker returns a Locker whose jobs live below root, an absolute
// ZooKeeper path of their own: root/<job>/lock is the job's zklock.Lock and
// root/<job>/run its run node, a persistent node of about 100 bytes per
// job name. Every instance of a fleet must use the same root and windows.
// It logs to the session's logger (zklock.WithLogger).
func NewLocker(s *zklock.Session, root string, opts ...LockerOption) (*Locker, error) {
	if s == nil {
		return nil, ErrNilSession
	}
	if err := zklock.ValidatePath(root); err != nil {
		return nil, fmt.Errorf("gocronlock: root: %w", err)
	}
	cfg := defaultLockerConfig()
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
	l := &Locker{
		s:    s,
		root: root,
		cfg:  cfg,
		by:   cfg.name,
		log:  s.Logger().With("component", "gocronlock", "root", root),
		jobs: map[string]*job{},
	}
	l.heard.born = time.Now()
	return l, nil
}

// Lock decides whether this instance runs the job named key now: it
// returns a gocron.Lock, held for the run, when it does, and an error
// (ErrLockHeld, ErrAlreadyRan or ErrYielded, matching ErrSkipped, or a
// failure) when it does not. It never waits for another instance and
// returns within the lock timeout (WithLockTimeout), or sooner when ctx
// ends. ctx is the job's own (gocron's): RunContext derives from it.
func (l *Locker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	entry := time.Now() // the timer's firing, as near as the Locker knows it
	if l == nil {
		return nil, ErrNil
	}
	if ctx == nil {
		return nil, ErrNilContext
	}
	j, err := l.job(key)
	if err != nil {
		return nil, err
	}
	calls := j.calls.Add(1)
	l.checkKey(ctx, j)
	p := &probe{entry: entry}
	if !j.busy.CompareAndSwap(false, true) {
		err := fmt.Errorf("%w: job %q: by a run of this instance", ErrLockHeld, key)
		l.report(ctx, j, p, err)
		return nil, err
	}
	lockCtx, cancel := context.WithTimeout(ctx, l.cfg.timeout)
	defer cancel()
	h, d, err := l.take(lockCtx, j, p)
	if d.decided || d.local || errors.Is(err, ErrLockHeld) {
		l.reached() // ZooKeeper answered
	}
	if d.decided || d.local {
		l.checkEnvelope(j, d, calls)
	}
	if err != nil {
		j.busy.Store(false)
		l.report(ctx, j, p, err)
		return nil, err
	}
	r := &runLock{l: l, j: j, hold: h}
	r.ctx, r.cancel = context.WithCancelCause(ctx)
	j.run.Store(r)
	// A loss between take's last look and the Store above found no run
	// to cancel (the loss handler reads j.run): look again.
	if err := h.Err(); err != nil {
		r.cancel(err)
	}
	l.report(ctx, j, p, nil)
	return r, nil
}

// report logs a Lock's outcome (a skip at Debug; a failure once per
// outage, or once a minute per job) and tells the observer.
func (l *Locker) report(ctx context.Context, j *job, p *probe, err error) {
	latency := time.Since(p.entry)
	l.late.observe(latency)
	switch o := outcomeOf(err); {
	case o == Ran:
	case o != Failed:
		l.log.Debug("run skipped", "job", j.key, "reason", err)
	default:
		l.failed(ctx, j, p, err)
	}
	l.calm()
	if l.cfg.observe != nil {
		l.cfg.observe(Event{Job: j.key, Outcome: outcomeOf(err), Latency: latency, Err: err})
	}
}

// failed logs a failed Lock by what it met: ZooKeeper silent for long
// (the outage's lines) or not yet (Debug), lateness (overload's), the
// caller's context ended (the program stops the job: Debug), or anything
// else (once a minute per job).
func (l *Locker) failed(ctx context.Context, j *job, p *probe, err error) {
	switch l.kindOf(ctx, err, p) {
	case failedCancelled:
		l.log.Debug("run skipped: the job's context ended", "job", j.key, "err", err)
	case failedSilent:
		l.log.Debug("run skipped: ZooKeeper silent", "job", j.key, "err", err)
	case failedUnreachable:
		l.unreachable(err)
	case failedLate:
		if !l.duringOutage(true) {
			l.tellLate(j, lateWhat(err))
		}
	default:
		now, last := time.Now().UnixNano(), j.warnedAt.Load()
		if now-last >= int64(time.Minute) && j.warnedAt.CompareAndSwap(last, now) {
			l.log.Warn("run skipped: lock failed (warned once a minute per job)", "job", j.key, "err", err)
		}
	}
}

// job returns the state of key, making it on first use.
func (l *Locker) job(key string) (*job, error) {
	dir, err := l.dir(key)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	if j := l.jobs[key]; j != nil {
		return j, nil
	}
	j, err := l.newJob(key, dir)
	if err != nil {
		return nil, err
	}
	l.jobs[key] = j
	return j, nil
}

// dir returns the path of key's node below the root.
func (l *Locker) dir(key string) (string, error) {
	name, err := nodeName(key)
	if err != nil {
		return "", err
	}
	dir := path.Join(l.root, name)
	// Escaping can triple a key: the whole path must still be one that
	// ZooKeeper takes (zklock's limit, the lock node's name included).
	if err := zklock.ValidatePath(path.Join(dir, lockName)); err != nil {
		return "", fmt.Errorf("%w: job %q below %s: %w", ErrInvalidKey, key, l.root, err)
	}
	return dir, nil
}

// newJob makes the state of key, whose node is dir; only Lock's keep it
// (l.jobs): a job entry and its lock are per job this instance schedules,
// not per key asked of LastRun or RemoveJob (issue 43, item 10).
func (l *Locker) newJob(key, dir string) (*job, error) {
	window, ok := l.cfg.windows[key]
	if !ok {
		window = l.cfg.window
	}
	j := &job{key: key, runPath: path.Join(dir, runName), window: window}
	lock, err := zklock.New(l.s, path.Join(dir, lockName), zklock.WithACL(l.cfg.acl), zklock.WithLossHandler(j.lost))
	if err != nil {
		return nil, fmt.Errorf("gocronlock: job %q: %w", key, err)
	}
	j.lock = lock
	return j, nil
}

// Run is a job's last run, as its run node records it.
type Run struct {
	// At is the ZooKeeper server's time of the run's start: its timer's
	// firing (see the package doc). After a change of ensemble leader or a
	// step back of the leader's clock, it is the time the rule counts
	// from instead, on the new clock. The zero time if the job never ran.
	At time.Time
	// By names the instance that made the run: host:pid.
	By string
	// Runs counts the runs the node has recorded.
	Runs int64
	// Window is the window of the node's last writer.
	Window time.Duration
}

// LastRun returns the job's last run as its run node records it; the zero
// Run if the job never ran (the node does not exist).
func (l *Locker) LastRun(ctx context.Context, key string) (Run, error) {
	if l == nil {
		return Run{}, ErrNil
	}
	if ctx == nil {
		return Run{}, ErrNilContext
	}
	dir, err := l.dir(key)
	if err != nil {
		return Run{}, err
	}
	if l.isClosed() {
		return Run{}, ErrClosed
	}
	data, stat, err := getNode(ctx, l.s.Conn(), path.Join(dir, runName))
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return Run{}, nil
	case err != nil:
		return Run{}, fmt.Errorf("gocronlock: job %q: read run node: %w", key, err)
	}
	last := runrec.Derive(data, stat.Mtime, stat.Mzxid)
	return Run{At: time.UnixMilli(last.At), By: last.By, Runs: last.Runs, Window: time.Duration(last.Window) * time.Millisecond}, nil
}

// isClosed reports whether Close was called.
func (l *Locker) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// Close releases the locks of runs still going and detaches the Locker
// from its session; later Lock calls return ErrClosed. It leaves the run
// nodes, which the next instances need. Close is idempotent.
func (l *Locker) Close() error {
	if l == nil {
		return ErrNil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	var errs []error
	for _, j := range l.jobs {
		// The run learns it first: its Unlock then says ErrClosed, not a
		// loss, whatever zklock says of the hold Close ends.
		if r := j.run.Load(); r != nil {
			r.closed.Store(true)
			r.cancel(fmt.Errorf("%w: the run's lock was released by Close", ErrClosed))
		}
		if err := j.lock.Close(); err != nil && !errors.Is(err, zklock.ErrSessionClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
