package tier

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierlock/tierlock/zklock"
)

// ErrUpgrade is zklock.ErrUpgrade: Lock called with a context that holds
// the read lock. An upgrade is refused, not queued: the write node would
// wait behind this process's own read node forever.
var ErrUpgrade = zklock.ErrUpgrade

// RWLock is the two-tier read/write lock: tier 1's admission queue in
// front of at most one read node and one write node of this process on
// ZooKeeper (tier 2, zklock.RWLock: Curator's InterProcessReadWriteLock
// layout and rules, so Curator processes share the path).
//
// Tier 1 is the admission queue the Lock and the Semaphore use: a reader
// takes one unit, a writer all of them, in arrival order, so a reader
// arriving while a writer waits queues behind it and local writers are
// not starved by a stream of local readers. Local readers share: the first
// one admitted queues the process's read node, the others wait for it (or
// find it held) and ride on it, and the last one out gives it up before
// giving its unit back. A read node behind which a writer of another
// process waits takes no new riders (see mayRideLocked in rwread.go), so
// local readers cannot starve it either.
//
// The self-deadlock rule: the process never queues its write node behind
// its own read node. A local writer is admitted only when every local
// reader has given its unit back, and the last rider gives the read node up
// before it does (the delete goes out on the session before the writer's
// create, and ZooKeeper applies a session's requests in order).
//
// Reentrancy is by held context, as for Lock: RLock with a context that
// holds the read lock counts, Lock with one that holds the write lock
// counts. A writer may take the read lock with its held context
// (downgrade): the read hold rides on the write node while the write lock
// is held; when the write hold ends with such readers left, the process
// takes a read node (zklock's rule lets it pass our own write node, never a
// foreign writer) and gives the write node up only if the read node goes at
// once; otherwise it keeps the write node, and the writer's units, until
// those readers are done, which excludes more than needed but never lets a
// writer in while we read (CURATOR-621). Lock with a context that holds
// the read lock returns ErrUpgrade.
//
// Every held context is cancelled when its hold ends: by its release, or by
// the loss of the node it rides on (context.Cause wraps ErrLockLost), under
// the same session lease as the mutex.
type RWLock struct {
	zk   *zklock.RWLock
	log  *slog.Logger
	adm  *admission // tier 1: a reader takes 1 unit, a writer rwUnits
	life closing    // Close, ordered against grants (see closing, lock.go)
	obs  observer

	// mu guards the node state below. It is never held across a request
	// that waits for ZooKeeper: the loss handler runs on go-zookeeper's
	// event goroutine and takes only lossMu.
	mu      sync.Mutex
	riders  int           // read holds on the read node
	rState  int           // rIdle, rAcquiring, rHeld
	rHold   *zklock.Hold  // the read node, while rHeld
	rDone   chan struct{} // closed when the read node's acquisition is over
	rClosed bool          // the read node takes no new riders (rwread.go)
	rGone   chan struct{} // closed when a read node closed to riders is given up
	writer  *rwHold       // the write hold, while one stands
	wHold   *zklock.Hold  // the write node: the writer's, or kept for downgraded readers
	downs   int           // read holds riding the write node (a downgrade's)

	// downgrading is set while a downgrade tries the read node with mu let
	// go: the readers it moves may leave meanwhile, and leave the nodes to
	// it.
	downgrading bool

	// lossMu guards live and each hold's node: the holds to cancel when the
	// node they ride on is lost.
	lossMu sync.Mutex
	live   map[*rwHold]struct{}
}

// rwUnits is a writer's share of the admission queue: all of it.
const rwUnits = 1 << 30

const (
	rIdle = iota
	rAcquiring
	rHeld
)

type rwHold struct {
	write  bool
	down   bool            // a read hold riding the write node; it holds no unit
	count  int             // under RWLock.mu
	ctx    context.Context // &judged
	cancel context.CancelCauseFunc
	judged judged
	node   string // the node it rides on, under lossMu
	token  int64
	start  time.Time
	// rides is the ZooKeeper hold of node, which judges the held context
	// (judged): a downgrade moves its read holds to the read node's.
	rides atomic.Pointer[zklock.Hold]
}

// Err judges the ZooKeeper hold h rides on now (see judged).
func (h *rwHold) Err() error { return h.rides.Load().Err() }

type rwKey struct {
	rw    *RWLock
	write bool
}

// NewRWLock returns a two-tier read/write lock on path. WithObserver is
// told its events (a reader riding the process's read node is acquired at
// TierHandoff); WithLockOptions configures the underlying zklock.RWLock
// (its handler of losses is the RWLock's own); WithHandoff and
// WithRevocable are refused (ErrInvalidOption).
func NewRWLock(s *zklock.Session, path string, opts ...Option) (*RWLock, error) {
	cfg, err := buildRecipeConfig("read/write lock", opts)
	if err != nil {
		return nil, err
	}
	rw := &RWLock{log: s.Logger().With("rwlock", path), adm: newAdmission(rwUnits),
		life: newClosing(), obs: observer{fn: cfg.observer, path: path},
		rGone: make(chan struct{}), live: map[*rwHold]struct{}{}}
	zopts := append(cfg.zkOpts[:len(cfg.zkOpts):len(cfg.zkOpts)], zklock.WithLossHandler(rw.onZKLost))
	z, err := zklock.NewRWLock(s, path, zopts...)
	if err != nil {
		return nil, fromZK(err)
	}
	rw.zk = z
	return rw, nil
}

// Path returns the lock path.
func (rw *RWLock) Path() string {
	if rw == nil {
		return ""
	}
	return rw.zk.Path()
}

// RLock waits for the read lock and returns a context carrying the hold
// (see Lock.Acquire for its life). With a context that holds the read lock
// it re-enters; with one that holds the write lock it takes a read hold
// riding on the write node (the first step of a downgrade).
func (rw *RWLock) RLock(ctx context.Context) (context.Context, error) {
	held, _, err := rw.rlock(ctx, true)
	return held, err
}

// TryRLock is RLock that never waits: false when a local writer holds or
// waits, when another local reader is still queueing the read node, or
// when a writer of another process precedes our read node or waits behind
// it.
func (rw *RWLock) TryRLock(ctx context.Context) (context.Context, bool, error) {
	return rw.rlock(ctx, false)
}

// Lock waits for the write lock and returns a context carrying the hold.
// With a context that holds the write lock it re-enters; with one that
// holds the read lock it returns ErrUpgrade at once.
func (rw *RWLock) Lock(ctx context.Context) (context.Context, error) {
	held, _, err := rw.lock(ctx, true)
	return held, err
}

// TryLock is Lock that never waits: false when any local hold exists or
// another process's node precedes our write node.
func (rw *RWLock) TryLock(ctx context.Context) (context.Context, bool, error) {
	return rw.lock(ctx, false)
}

// holdOfLocked returns ctx's current hold of kind write, under mu.
func (rw *RWLock) holdOfLocked(ctx context.Context, write bool) *rwHold {
	h, _ := ctx.Value(rwKey{rw, write}).(*rwHold)
	if h == nil || h.count <= 0 {
		return nil
	}
	if write && rw.writer != h {
		return nil
	}
	return h
}

func (rw *RWLock) check(ctx context.Context) error {
	switch {
	case rw == nil:
		return errNil("RWLock")
	case ctx == nil:
		return ErrNilContext
	}
	return nil
}

func (rw *RWLock) newHold(ctx context.Context, write bool, zh *zklock.Hold) *rwHold {
	h := &rwHold{write: write, count: 1, node: zh.Node(), token: zh.Token(), start: time.Now()}
	h.rides.Store(zh)
	h.ctx, h.cancel = h.judged.begin(ctx, rwKey{rw, write}, h, h)
	rw.lossMu.Lock()
	rw.live[h] = struct{}{}
	rw.lossMu.Unlock()
	// A loss before h was live is applied here: the loss handler runs
	// after Lost is closed, we look at Lost after h is live.
	select {
	case <-zh.Lost():
		h.cancel(lossCause(zh))
	default:
	}
	return h
}

// withdraw takes h, published as Close began, back out of live, unless
// Close took it first (see closing), and cancels it. It reports whether it
// took it: the caller then undoes the grant.
func (rw *RWLock) withdraw(h *rwHold) bool {
	rw.lossMu.Lock()
	_, ok := rw.live[h]
	delete(rw.live, h)
	rw.lossMu.Unlock()
	if ok {
		h.cancel(ErrClosed)
	}
	return ok
}

// endHold takes h out of live and cancels it; it reports whether h was
// still live (Close takes the live holds too: one of the two ends it).
func (rw *RWLock) endHold(h *rwHold, cause error) bool {
	rw.lossMu.Lock()
	_, live := rw.live[h]
	delete(rw.live, h)
	rw.lossMu.Unlock()
	h.cancel(cause)
	return live
}

// reenterLocked counts a re-entry of ctx's hold of kind write, if it has
// one; mu is held.
func (rw *RWLock) reenterLocked(ctx context.Context, write bool) (context.Context, bool, error) {
	h := rw.holdOfLocked(ctx, write)
	if h == nil {
		return nil, false, nil
	}
	if told(h.ctx) != nil {
		return nil, true, context.Cause(h.ctx)
	}
	h.count++
	return ctx, true, nil
}

// admit takes n units of tier 1: waiting, or trying. It reports false
// without a wait's error when a try found them taken.
func (rw *RWLock) admit(ctx context.Context, n int64, wait bool) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if !wait {
		return rw.adm.tryAcquire(n), nil
	}
	if err := rw.adm.acquire(ctx, n, rw.life.done); err != nil {
		return false, err
	}
	if rw.life.isClosed() {
		rw.adm.release(n)
		return false, ErrClosed
	}
	return true, nil
}

// Release ends one RLock or Lock of the hold held carries: its read hold
// when it carries one (a read taken under a write hold included), else its
// write hold. The last release of a read hold by the process's last local
// reader gives the read node up before letting waiters through; the last of
// a write hold gives the write node up, unless read holds taken under it
// remain (a downgrade: see RWLock). ErrNotHolder for a context without a
// current hold, logged at Warn too if it never carried a hold of this lock
// (see misuse.go); a lost hold's last Release returns an error wrapping
// ErrLockLost.
func (rw *RWLock) Release(held context.Context) error {
	if err := rw.check(held); err != nil {
		return err
	}
	_, read := held.Value(rwKey{rw, false}).(*rwHold)
	if !read && held.Value(rwKey{rw, true}) == nil {
		return warnNotHolder(rw.log, "read/write lock", "RLock or Lock") // misuse.go
	}
	return rw.release(held, !read)
}

// release ends one hold of kind write that held carries.
func (rw *RWLock) release(held context.Context, write bool) error {
	rw.mu.Lock()
	h := rw.holdOfLocked(held, write)
	if h == nil || rw.life.isClosed() {
		closed := rw.life.isClosed()
		rw.mu.Unlock()
		if closed && held.Value(rwKey{rw, write}) != nil {
			return ErrClosed
		}
		return ErrNotHolder
	}
	h.count--
	if h.count > 0 {
		rw.mu.Unlock()
		return nil
	}
	cause := context.Cause(h.ctx) // before the hold ends: a loss, or nil
	if rw.endHold(h, errReleased) {
		rw.obs.observe(Event{Kind: Released, Held: time.Since(h.start)})
	}
	var err error
	if write {
		err = rw.endWriteLocked() // unlocks mu
	} else {
		err = rw.leaveReaderLocked(h) // unlocks mu
	}
	err = reportLoss(err, cause)
	if err = rw.life.releaseErr(err); err != nil && err != ErrClosed && !errors.Is(err, ErrLockLost) {
		err = fromZK(fmt.Errorf("release %s: %w", rw.Path(), err))
	}
	return err
}

// onZKLost is zklock's loss handler for both nodes: it cancels the held
// contexts riding on the lost node, at once (possibly on go-zookeeper's
// event goroutine; it takes only lossMu).
func (rw *RWLock) onZKLost(node string, cause error) {
	if closedByTier(cause) {
		return
	}
	err := lossErr(cause)
	rw.lossMu.Lock()
	defer rw.lossMu.Unlock()
	for h := range rw.live {
		if h.node == node {
			h.cancel(err)
		}
	}
	rw.obs.notify(Event{Kind: Lost, Err: err})
}

// Close ends the lock: holds are cancelled (cause ErrClosed) and their
// nodes released, waits end with ErrClosed, later calls return ErrClosed.
// Close is idempotent.
func (rw *RWLock) Close() error {
	if rw == nil {
		return errNil("RWLock")
	}
	if !rw.life.begin() {
		return nil
	}
	rw.lossMu.Lock()
	var ended []*rwHold
	for h := range rw.live {
		h.cancel(ErrClosed)
		delete(rw.live, h)
		ended = append(ended, h)
	}
	rw.lossMu.Unlock()
	// Their Release will find nothing (ErrClosed): they end here.
	for _, h := range ended {
		rw.obs.observe(Event{Kind: Released, Held: time.Since(h.start)})
	}
	err := rw.zk.Close()
	rw.obs.close()
	return err
}
