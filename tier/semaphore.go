package tier

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tierlock/tierlock/zklock"
)

// ErrInvalidPermits is zklock.ErrInvalidPermits: a permit count outside
// 1..n.
var ErrInvalidPermits = zklock.ErrInvalidPermits

// Semaphore is the two-tier counting semaphore of n leases: tier 1's
// admission queue of n units (the one the Lock and the RWLock use) in
// front of zklock.Semaphore (tier 2, Curator's InterProcessSemaphoreV2
// layout, so Curator processes share the n leases of the path).
//
// A goroutine asking for k permits first takes k of the process's n local
// permits, in arrival order (a large request is not overtaken by small
// ones), then k lease nodes on ZooKeeper; releasing gives the lease nodes
// up first, then the local permits. So the process has at most as many
// lease nodes as its holders hold permits (no idle lease is kept), and
// goroutines beyond n wait in the process with no node on ZooKeeper. The
// held context is cancelled when the hold ends: by Release, or by the loss
// of any of its lease nodes (context.Cause wraps ErrLockLost), under the
// same session lease as the mutex. Semaphore holds are not reentrant:
// every Acquire takes new permits.
type Semaphore struct {
	zk  *zklock.Semaphore
	n   int
	adm *admission // tier 1: n units, k per hold
	log *slog.Logger

	mu   sync.Mutex // guards each hold's done
	life closing    // Close, ordered against grants (see closing, lock.go)
	obs  observer

	// lossMu guards live: holds by lease node, to cancel on a loss.
	lossMu sync.Mutex
	live   map[string]*semHold
}

type semHold struct {
	k      int
	lease  *zklock.Lease
	ctx    context.Context // &judged
	cancel context.CancelCauseFunc
	judged judged
	done   bool // under Semaphore.mu
	start  time.Time
}

type semKey struct{ s *Semaphore }

// NewSemaphore returns a two-tier semaphore of n leases at path.
// WithObserver is told its events; WithLockOptions configures the
// underlying zklock.Semaphore (its handler of losses is the Semaphore's
// own); WithHandoff and WithRevocable are refused (ErrInvalidOption).
func NewSemaphore(s *zklock.Session, path string, n int, opts ...Option) (*Semaphore, error) {
	if n < 1 {
		return nil, fromZK(fmt.Errorf("%w: %d leases", ErrInvalidOption, n))
	}
	cfg, err := buildRecipeConfig("semaphore", opts)
	if err != nil {
		return nil, err
	}
	sem := &Semaphore{n: n, adm: newAdmission(int64(n)), log: s.Logger().With("semaphore", path),
		life: newClosing(), live: map[string]*semHold{}, obs: observer{fn: cfg.observer, path: path}}
	zopts := append(cfg.zkOpts[:len(cfg.zkOpts):len(cfg.zkOpts)], zklock.WithLossHandler(sem.onZKLost))
	z, err := zklock.NewSemaphore(s, path, n, zopts...)
	if err != nil {
		return nil, fromZK(err)
	}
	sem.zk = z
	return sem, nil
}

// Path returns the semaphore's path.
func (sem *Semaphore) Path() string {
	if sem == nil {
		return ""
	}
	return sem.zk.Path()
}

// Size returns n.
func (sem *Semaphore) Size() int {
	if sem == nil {
		return 0
	}
	return sem.n
}

// Acquire waits for k permits (1 <= k <= n) and returns a context carrying
// the hold; release it with Release.
func (sem *Semaphore) Acquire(ctx context.Context, k int) (context.Context, error) {
	held, _, err := sem.acquire(ctx, k, true)
	return held, err
}

// TryAcquire is Acquire that never waits: false when fewer than k local
// permits are free, others wait before us, or fewer than k leases are free
// on ZooKeeper; no node is left behind.
func (sem *Semaphore) TryAcquire(ctx context.Context, k int) (context.Context, bool, error) {
	return sem.acquire(ctx, k, false)
}

func (sem *Semaphore) acquire(ctx context.Context, k int, wait bool) (context.Context, bool, error) {
	switch {
	case sem == nil:
		return nil, false, errNil("Semaphore")
	case ctx == nil:
		return nil, false, ErrNilContext
	case k < 1 || k > sem.n:
		return nil, false, fromZK(fmt.Errorf("%w: %d of %d", ErrInvalidPermits, k, sem.n))
	}
	start, refused := time.Now(), sem.life.isClosed()
	if wait {
		sem.obs.observe(Event{Kind: Acquiring})
	}
	held, err := sem.take(ctx, k, wait)
	if err != nil && !refused { // closed before it began: refused, not waited for (see waitEnded)
		err = waitEnded(ctx, sem.Path(), start, sem.gateHolder, err)
	}
	switch {
	case err != nil:
		sem.obs.observe(Event{Kind: Failed, Tier: tierOf(err), Wait: time.Since(start), Err: err, Try: !wait})
		return nil, false, err
	case held == nil:
		return nil, false, nil
	}
	sem.obs.observe(Event{Kind: Acquired, Tier: TierZooKeeper, Wait: time.Since(start), Try: !wait})
	return held, true, nil
}

// take takes k units of tier 1, then k leases: nil, and no error, when a
// try found them taken.
func (sem *Semaphore) take(ctx context.Context, k int, wait bool) (context.Context, error) {
	if ok, err := sem.admit(ctx, k, wait); !ok || err != nil {
		return nil, err
	}
	var lease *zklock.Lease
	ok := true
	var err error
	if wait {
		lease, err = sem.zk.Acquire(ctx, k)
	} else {
		lease, ok, err = sem.zk.TryAcquire(ctx, k)
	}
	if err != nil || !ok {
		sem.adm.release(int64(k))
		return nil, fromZK(err)
	}
	if testHookSemPublish != nil {
		testHookSemPublish(sem)
	}
	h := &semHold{k: k, lease: lease, start: time.Now()}
	h.ctx, h.cancel = h.judged.begin(ctx, semKey{sem}, h, lease)
	// Published, then the closed flag looked at (see closing).
	err = sem.life.publish(func() {
		sem.lossMu.Lock()
		for _, n := range lease.Nodes() {
			sem.live[n] = h
		}
		sem.lossMu.Unlock()
	}, func() {
		if sem.withdraw(h) {
			h.cancel(ErrClosed)
			_ = lease.Release()
			sem.adm.release(int64(k))
		}
	})
	if err != nil {
		return nil, err
	}
	// A loss before h was live is applied here (the handler runs after
	// Lost is closed; we look after publishing h).
	select {
	case <-lease.Lost():
		h.cancel(lease.Err())
	default:
	}
	return h.ctx, nil
}

// admit takes k units of tier 1: waiting, or trying. It reports false
// without an error when a try found them taken.
func (sem *Semaphore) admit(ctx context.Context, k int, wait bool) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if sem.life.isClosed() {
		return false, ErrClosed
	}
	if !wait {
		return sem.adm.tryAcquire(int64(k)), nil
	}
	if err := sem.adm.acquire(ctx, int64(k), sem.life.done); err != nil {
		return false, err
	}
	return true, nil
}

// withdraw takes h out of live, unless Close took it first (see closing):
// a grant published as Close began, or a Release racing Close. It reports
// whether it took it.
func (sem *Semaphore) withdraw(h *semHold) bool {
	sem.lossMu.Lock()
	defer sem.lossMu.Unlock()
	nodes := h.lease.Nodes()
	if len(nodes) == 0 || sem.live[nodes[0]] != h {
		return false
	}
	for _, n := range nodes {
		delete(sem.live, n)
	}
	return true
}

// Release ends the hold held carries: its lease nodes are given up first
// (guaranteed deletes), then its local permits. ErrNotHolder for a context
// without a live hold, logged at Warn too if it never carried a hold of
// this semaphore (see misuse.go); a lost hold's Release returns an error
// wrapping ErrLockLost.
func (sem *Semaphore) Release(held context.Context) error {
	switch {
	case sem == nil:
		return errNil("Semaphore")
	case held == nil:
		return ErrNilContext
	}
	h, _ := held.Value(semKey{sem}).(*semHold)
	if h == nil {
		return warnNotHolder(sem.log, "semaphore", "Acquire") // misuse.go
	}
	sem.mu.Lock()
	if h.done {
		sem.mu.Unlock()
		return ErrNotHolder
	}
	h.done = true
	if sem.life.isClosed() {
		sem.mu.Unlock()
		return ErrClosed
	}
	sem.mu.Unlock()
	cause := context.Cause(h.ctx) // before the hold ends: a loss, or nil
	// Close may have taken h first, and told the observer.
	if sem.withdraw(h) {
		sem.obs.observe(Event{Kind: Released, Held: time.Since(h.start)})
	}
	h.cancel(errReleased)
	err := fromZK(sem.life.releaseErr(h.lease.Release()))
	sem.adm.release(int64(h.k)) // the lease nodes first, then the gate
	err = reportLoss(err, cause)
	return err
}

// Token returns the fencing token of the hold's first lease node. A hold
// found lost as Token is asked (judged then, as Lock.Token judges) returns
// 0 and the loss.
func (sem *Semaphore) Token(held context.Context) (int64, error) {
	if sem == nil {
		return 0, errNil("Semaphore")
	}
	if held == nil {
		return 0, ErrNilContext
	}
	h, _ := held.Value(semKey{sem}).(*semHold)
	if h == nil {
		return 0, ErrNotHolder
	}
	sem.mu.Lock()
	done := h.done
	sem.mu.Unlock()
	if done {
		return 0, ErrNotHolder
	}
	if err := lostCause(h.ctx); err != nil { // judged outside mu
		return 0, err
	}
	return h.lease.Token(), nil
}

// HoldCount reports 1 while held carries a hold of this semaphore, 0
// otherwise: semaphore holds are not reentrant.
func (sem *Semaphore) HoldCount(held context.Context) int {
	if sem.Permits(held) > 0 {
		return 1
	}
	return 0
}

// Permits reports how many permits the hold held carries: 0 without one.
func (sem *Semaphore) Permits(held context.Context) int {
	if sem == nil || held == nil {
		return 0
	}
	h, _ := held.Value(semKey{sem}).(*semHold)
	if h == nil {
		return 0
	}
	sem.mu.Lock()
	defer sem.mu.Unlock()
	if h.done {
		return 0
	}
	return h.k
}

// InUse reports how many local permits are taken (holds and acquisitions
// in progress).
func (sem *Semaphore) InUse() int {
	if sem == nil {
		return 0
	}
	return int(sem.adm.inUse())
}

// testHookSemPublish, when a test sets it, runs in acquire between the
// grant and the publication of the hold.
var testHookSemPublish func(*Semaphore)

func (sem *Semaphore) onZKLost(node string, cause error) {
	if closedByTier(cause) {
		return
	}
	err := lossErr(cause)
	sem.lossMu.Lock()
	defer sem.lossMu.Unlock()
	if h := sem.live[node]; h != nil {
		h.cancel(err)
	}
	sem.obs.notify(Event{Kind: Lost, Err: err})
}

// Close ends the semaphore: holds are cancelled (cause ErrClosed) and
// their leases released, waiters get ErrClosed, later calls return
// ErrClosed. Close is idempotent.
func (sem *Semaphore) Close() error {
	if sem == nil {
		return errNil("Semaphore")
	}
	if !sem.life.begin() {
		return nil
	}
	sem.lossMu.Lock()
	holds := map[*semHold]struct{}{}
	for n, h := range sem.live {
		holds[h] = struct{}{}
		delete(sem.live, n)
	}
	sem.lossMu.Unlock()
	var errs []error
	for h := range holds {
		h.cancel(ErrClosed)
		sem.obs.observe(Event{Kind: Released, Held: time.Since(h.start)})
		if err := h.lease.Release(); err != nil && !errors.Is(err, zklock.ErrNotHeld) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, sem.zk.Close())
	sem.obs.close()
	return errors.Join(errs...)
}
