package tier

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/tierlock/tierlock/zklock"
)

// ErrUpgrade is zklock.ErrUpgrade: Lock called with a context that holds
// the read lock. An upgrade is refused, not queued: the write node would
// wait behind this process's own read node forever.
var ErrUpgrade = zklock.ErrUpgrade

// RWLock is the two-tier read/write lock: a local read/write gate (tier 1)
// in front of at most one read node and one write node of this process on
// ZooKeeper (tier 2, zklock.RWLock: Curator's InterProcessReadWriteLock
// layout and rules, so Curator processes share the path).
//
// Local readers share: the first one past the gate queues the process's
// read node, the others wait for it (or find it held) and ride on it, and
// the last one out gives it up. A local writer excludes every other local
// holder and needs the write node. The gate is FIFO: a reader arriving
// while a writer waits queues behind it, so writers are not starved by a
// stream of readers.
//
// The self-deadlock rule: the process never queues its write node behind
// its own read node. A local writer is let past the gate only when no
// local reader is past it, and the last reader gives the read node up
// before it lets anyone through (the delete goes out on the session before
// the writer's create, and ZooKeeper applies a session's requests in
// order, so the write node is created after the read node is gone).
//
// Reentrancy is by held context, as for Lock: RLock with a context that
// holds the read lock counts, Lock with one that holds the write lock
// counts. A writer may take the read lock with its held context
// (downgrade): the read hold rides on the write node while the write lock
// is held; when the write hold ends with such readers left, the process
// takes a read node (zklock's rule lets it pass our own write node, never a
// foreign writer) and gives the write node up only if the read node goes at
// once; otherwise it keeps the write node until those readers are done,
// which excludes more than needed but never lets a writer in while we read
// (CURATOR-621). Lock with a context that holds the read lock returns
// ErrUpgrade.
//
// Every held context is cancelled when its hold ends: by its release, or by
// the loss of the node it rides on (context.Cause wraps ErrLockLost), under
// the same session lease as the mutex.
type RWLock struct {
	zk  *zklock.RWLock
	log *slog.Logger

	// mu guards the gate and node state below. It is never held across a
	// request that waits for ZooKeeper: the loss handler runs on
	// go-zookeeper's event goroutine and takes only lossMu.
	mu          sync.Mutex
	queue       []*rwWaiter
	nreaders    int  // readers past the gate (acquiring the read node or holding)
	wAdmitted   bool // a writer is past the gate (acquiring the write node or holding)
	writer      *rwHold
	wNode       bool         // the write node is ours: held by writer, or kept for readers after a deferred downgrade
	wHold       *zklock.Hold // the write node's hold, while wNode
	rHold       *zklock.Hold // the read node's hold, while rState is rHeld
	downgrading bool         // a write hold ended with readers left; the read node is being tried
	rState      int          // rIdle, rAcquiring, rHeld
	rClosed     bool         // the held read node takes no new riders: a foreign writer waits behind it (mayRideLocked)
	rDone       chan struct{}
	closed      bool
	done        chan struct{}

	// lossMu guards live and each hold's node: the holds to cancel when the
	// node they ride on is lost.
	lossMu sync.Mutex
	live   map[*rwHold]struct{}
}

const (
	rIdle = iota
	rAcquiring
	rHeld
)

type rwHold struct {
	write  bool
	count  int // under RWLock.mu
	ctx    context.Context
	cancel context.CancelCauseFunc
	node   string // the node it rides on, under lossMu
	token  int64
}

type rwKey struct {
	rw    *RWLock
	write bool
}

type rwWaiter struct {
	write bool
	ready chan struct{} // closed, under mu, when admitted
}

// NewRWLock returns a two-tier read/write lock on path; opts configure the
// underlying zklock.RWLock (its handler of losses is the RWLock's own).
func NewRWLock(s *zklock.Session, path string, opts ...zklock.Option) (*RWLock, error) {
	rw := &RWLock{log: s.Logger().With("rwlock", path), done: make(chan struct{}), live: map[*rwHold]struct{}{}}
	zopts := append(opts[:len(opts):len(opts)], zklock.WithLossHandler(rw.onZKLost))
	z, err := zklock.NewRWLock(s, path, zopts...)
	if err != nil {
		return nil, err
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
// when a writer of another process precedes our read node.
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

func (rw *RWLock) canReadLocked() bool  { return !rw.wAdmitted && !rw.wNode && !rw.rClosed }
func (rw *RWLock) canWriteLocked() bool { return !rw.wAdmitted && !rw.wNode && rw.nreaders == 0 }

// wakeLocked admits the waiters at the head of the queue that may go: a
// run of readers, or one writer.
func (rw *RWLock) wakeLocked() {
	for len(rw.queue) > 0 {
		w := rw.queue[0]
		if w.write {
			if !rw.canWriteLocked() {
				return
			}
			rw.wAdmitted = true
		} else {
			if !rw.canReadLocked() {
				return
			}
			rw.nreaders++
		}
		rw.queue[0] = nil
		rw.queue = rw.queue[1:]
		close(w.ready)
	}
}

// waitGate queues w and waits until it is admitted (nil) or gives up; mu
// is held on entry and released on return.
func (rw *RWLock) waitGate(ctx context.Context, w *rwWaiter) error {
	rw.queue = append(rw.queue, w)
	rw.mu.Unlock()
	var err error
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-rw.done:
		err = ErrClosed
	}
	rw.mu.Lock()
	defer rw.mu.Unlock()
	select {
	case <-w.ready:
		// Admitted as we gave up (the close happened under mu, before we
		// took it): undo the admission.
		if w.write {
			rw.wAdmitted = false
		} else {
			rw.leaveReaderLocked()
		}
	default:
		for i, q := range rw.queue {
			if q == w {
				rw.queue = append(rw.queue[:i], rw.queue[i+1:]...)
				break
			}
		}
	}
	// A writer leaving the head may let the readers behind it go.
	rw.wakeLocked()
	return err
}

func (rw *RWLock) newHold(ctx context.Context, write bool, node string, token int64) *rwHold {
	h := &rwHold{write: write, count: 1, node: node, token: token}
	h.ctx, h.cancel = context.WithCancelCause(context.WithValue(context.WithoutCancel(ctx), rwKey{rw, write}, h))
	rw.lossMu.Lock()
	rw.live[h] = struct{}{}
	rw.lossMu.Unlock()
	return h
}

func (rw *RWLock) endHold(h *rwHold, cause error) {
	rw.lossMu.Lock()
	delete(rw.live, h)
	rw.lossMu.Unlock()
	h.cancel(cause)
}

func (rw *RWLock) rlock(ctx context.Context, wait bool) (context.Context, bool, error) {
	if err := rw.check(ctx); err != nil {
		return nil, false, err
	}
	rw.mu.Lock()
	if rw.closed {
		rw.mu.Unlock()
		return nil, false, ErrClosed
	}
	if h := rw.holdOfLocked(ctx, false); h != nil {
		defer rw.mu.Unlock()
		if h.ctx.Err() != nil {
			return nil, false, context.Cause(h.ctx)
		}
		h.count++
		return ctx, true, nil
	}
	if w := rw.holdOfLocked(ctx, true); w != nil {
		// Read under our own write hold: it rides on the write node.
		defer rw.mu.Unlock()
		if w.ctx.Err() != nil {
			return nil, false, context.Cause(w.ctx)
		}
		rw.nreaders++
		h := rw.newHold(ctx, false, w.node, w.token)
		return h.ctx, true, nil
	}
	if err := ctx.Err(); err != nil {
		rw.mu.Unlock()
		return nil, false, err
	}
	if rw.canReadLocked() && len(rw.queue) == 0 {
		rw.nreaders++
		rw.mu.Unlock()
	} else if !wait {
		rw.mu.Unlock()
		return nil, false, nil
	} else if err := rw.waitGate(ctx, &rwWaiter{ready: make(chan struct{})}); err != nil {
		return nil, false, err
	}
	// Past the gate, counted in nreaders: now the read node.
	return rw.readNode(ctx, wait)
}

// readNode takes this reader, past the gate and counted in nreaders, onto
// the process's read node: it rides the held node, waits for a reader that
// is queueing it, or queues it. It returns the held context, or false or
// an error with the reader counted out.
func (rw *RWLock) readNode(ctx context.Context, wait bool) (context.Context, bool, error) {
	zr := rw.zk.ReadLock()
	mine := false // this reader queued the held node: nobody rode it before
	for {
		rw.mu.Lock()
		switch rw.rState {
		case rHeld:
			select {
			case <-rw.rHold.Lost():
				// Lost under earlier readers (their contexts are
				// cancelled): queue a new node; zklock gives the old up.
				rw.rState = rIdle
				rw.mu.Unlock()
				continue
			default:
			}
			if !mine && !rw.mayRideLocked(ctx) {
				if !wait {
					rw.leaveReaderLocked()
					rw.mu.Unlock()
					return nil, false, nil
				}
				if err := rw.rejoinLocked(ctx); err != nil {
					return nil, false, err
				}
				continue
			}
			return rw.rideLocked(ctx), true, nil
		case rAcquiring:
			if err := rw.awaitReadNodeLocked(ctx, wait); err != nil || !wait {
				return nil, false, err
			}
		default: // rIdle: this reader queues the node for all
			if err := rw.queueReadNodeLocked(ctx, zr, wait); err != nil || !wait && rw.rState != rHeld {
				return nil, false, err
			}
			mine = true
		}
	}
}

// mayRideLocked reports whether a new reader may ride the held read node:
// not once a writer of another process is queued behind it, which would
// wait for as long as overlapping local readers keep riding. The first
// reader to see such a writer closes the node to riders (rClosed): the
// readers on it finish, the last gives it up, and the readers waiting
// meanwhile queue a new node behind the writer. mu is held; it is let go
// during the check, which costs a children listing only when the queue
// changed since the last one (zklock.RWLock.WriterWaiting).
func (rw *RWLock) mayRideLocked(ctx context.Context) bool {
	if rw.rClosed {
		return false
	}
	zh := rw.rHold
	rw.mu.Unlock()
	waiting, err := rw.zk.WriterWaiting(ctx)
	rw.mu.Lock()
	if rw.rState != rHeld || rw.rHold != zh {
		return false // the node changed meanwhile: the caller looks again
	}
	if waiting || err != nil {
		// An error leaves it unknown: stop riding, which costs a new node.
		rw.rClosed = true
		return false
	}
	return !rw.rClosed
}

// rejoinLocked counts this reader out and queues it at the gate again,
// behind the node's last rider; mu is held and released.
func (rw *RWLock) rejoinLocked(ctx context.Context) error {
	rw.leaveReaderLocked()
	return rw.waitGate(ctx, &rwWaiter{ready: make(chan struct{})})
}

// rideLocked makes a read hold on the held read node; mu is held and
// released.
func (rw *RWLock) rideLocked(ctx context.Context) context.Context {
	zh := rw.rHold
	h := rw.newHold(ctx, false, zh.Node(), zh.Token())
	rw.mu.Unlock()
	// A loss before h was live is applied here: the loss handler runs
	// after Lost is closed, we look at Lost after h is live.
	select {
	case <-zh.Lost():
		h.cancel(lossCause(zh))
	default:
	}
	return h.ctx
}

// awaitReadNodeLocked waits for the reader that is queueing the read node
// (a try does not wait: it counts itself out); mu is held and released.
// An error counts the reader out.
func (rw *RWLock) awaitReadNodeLocked(ctx context.Context, wait bool) error {
	if !wait {
		rw.leaveReaderLocked()
		rw.mu.Unlock()
		return nil
	}
	ch := rw.rDone
	rw.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	case <-rw.done:
	}
	rw.mu.Lock()
	rw.leaveReaderLocked()
	rw.mu.Unlock()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return ErrClosed
}

// queueReadNodeLocked queues the process's read node for every local
// reader; mu is held and released. On failure (an error, or a try that
// found a writer first) the reader is counted out and rState stays rIdle.
func (rw *RWLock) queueReadNodeLocked(ctx context.Context, zr *zklock.Lock, wait bool) error {
	rw.rState = rAcquiring
	rw.rDone = make(chan struct{})
	rw.mu.Unlock()
	zh, ok, err := zkAcquire(ctx, zr, wait)
	rw.mu.Lock()
	defer rw.mu.Unlock()
	close(rw.rDone)
	if err != nil || !ok {
		rw.rState = rIdle
		rw.leaveReaderLocked()
		return fromZK(err)
	}
	rw.rState, rw.rHold = rHeld, zh
	return nil
}

// leaveReaderLocked counts one reader out; the last one gives the read
// node up (and a write node kept by a deferred downgrade), then lets the
// queue go: the node first, then the gate.
func (rw *RWLock) leaveReaderLocked() error {
	rw.nreaders--
	if rw.nreaders > 0 || rw.downgrading {
		return nil
	}
	var errs []error
	if rw.rState == rHeld {
		errs = append(errs, rw.rHold.Release())
		rw.rState, rw.rClosed, rw.rHold = rIdle, false, nil
	}
	if rw.wNode && rw.writer == nil && !rw.wAdmitted {
		errs = append(errs, rw.wHold.Release())
		rw.wNode, rw.wHold = false, nil
	}
	rw.wakeLocked()
	return errors.Join(errs...)
}

func (rw *RWLock) lock(ctx context.Context, wait bool) (context.Context, bool, error) {
	if err := rw.check(ctx); err != nil {
		return nil, false, err
	}
	rw.mu.Lock()
	if rw.closed {
		rw.mu.Unlock()
		return nil, false, ErrClosed
	}
	if h := rw.holdOfLocked(ctx, true); h != nil {
		defer rw.mu.Unlock()
		if h.ctx.Err() != nil {
			return nil, false, context.Cause(h.ctx)
		}
		h.count++
		return ctx, true, nil
	}
	if rw.holdOfLocked(ctx, false) != nil {
		rw.mu.Unlock()
		return nil, false, ErrUpgrade
	}
	if err := ctx.Err(); err != nil {
		rw.mu.Unlock()
		return nil, false, err
	}
	if rw.canWriteLocked() && len(rw.queue) == 0 {
		rw.wAdmitted = true
		rw.mu.Unlock()
	} else if !wait {
		rw.mu.Unlock()
		return nil, false, nil
	} else if err := rw.waitGate(ctx, &rwWaiter{write: true, ready: make(chan struct{})}); err != nil {
		return nil, false, err
	}
	// Past the gate: no local reader is, and the read node was given up
	// (its delete precedes our create on the session).
	zw := rw.zk.WriteLock()
	zh, ok, err := zkAcquire(ctx, zw, wait)
	rw.mu.Lock()
	if err != nil || !ok {
		rw.wAdmitted = false
		rw.wakeLocked()
		rw.mu.Unlock()
		return nil, false, fromZK(err)
	}
	rw.wNode, rw.wHold = true, zh
	h := rw.newHold(ctx, true, zh.Node(), zh.Token())
	rw.writer = h
	rw.mu.Unlock()
	select {
	case <-zh.Lost():
		h.cancel(lossCause(zh))
	default:
	}
	return h.ctx, true, nil
}

// Release ends one RLock or Lock of the hold held carries: its read hold
// when it carries one (a read taken under a write hold included), else its
// write hold. The last release of a read hold by the process's last local
// reader gives the read node up before letting waiters through; the last of
// a write hold gives the write node up, unless read holds taken under it
// remain (a downgrade: see RWLock). ErrNotHolder for a context without a
// current hold; a lost hold's last Release returns an error wrapping
// ErrLockLost.
func (rw *RWLock) Release(held context.Context) error {
	if err := rw.check(held); err != nil {
		return err
	}
	_, read := held.Value(rwKey{rw, false}).(*rwHold)
	return rw.unlock(held, !read)
}

// HoldCount reports how many times the hold held carries (its read hold
// if it carries one, else its write hold) was taken and not yet released:
// 0 when it carries no current hold of this lock.
func (rw *RWLock) HoldCount(held context.Context) int {
	if rw == nil || held == nil {
		return 0
	}
	rw.mu.Lock()
	defer rw.mu.Unlock()
	_, read := held.Value(rwKey{rw, false}).(*rwHold)
	if h := rw.holdOfLocked(held, !read); h != nil {
		return h.count
	}
	return 0
}

func (rw *RWLock) unlock(held context.Context, write bool) error {
	if err := rw.check(held); err != nil {
		return err
	}
	rw.mu.Lock()
	h := rw.holdOfLocked(held, write)
	if h == nil || rw.closed {
		closed := rw.closed
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
	lossErr := context.Cause(h.ctx)
	rw.endHold(h, errReleased)
	var err error
	if write {
		err = rw.endWriteLocked() // unlocks mu
	} else {
		err = rw.leaveReaderLocked()
		rw.mu.Unlock()
	}
	if lossErr != nil && errors.Is(lossErr, ErrLockLost) && !errors.Is(err, ErrLockLost) {
		err = lossErr
	}
	if err != nil && !errors.Is(err, ErrLockLost) {
		err = fmt.Errorf("tier: release %s: %w", rw.Path(), err)
	}
	return err
}

// endWriteLocked ends the write hold; mu is held and released.
func (rw *RWLock) endWriteLocked() error {
	rw.writer = nil
	rw.wAdmitted = false
	zw := rw.wHold
	if rw.nreaders == 0 {
		rw.wNode, rw.wHold = false, nil
		err := zw.Release()
		rw.wakeLocked()
		rw.mu.Unlock()
		return err
	}
	// A downgrade. wNode stays set, so nobody passes the gate meanwhile;
	// the readers left may leave meanwhile, and leave the nodes to us.
	rw.downgrading = true
	rw.mu.Unlock()
	zr, ok, terr := rw.zk.ReadLock().TryAcquire(context.Background())
	rw.mu.Lock()
	defer rw.mu.Unlock()
	rw.downgrading = false
	if terr != nil || !ok {
		// A writer of another process queued between our write node and
		// the read node (or the try failed): keep the write node until
		// the last reader leaves.
		rw.log.Debug("downgrade deferred: keeping the write node for the readers", "err", terr)
		if rw.nreaders == 0 {
			rw.wNode, rw.wHold = false, nil
			err := zw.Release()
			rw.wakeLocked()
			return err
		}
		return nil
	}
	// The read node goes on its own (no foreign writer before it, and none
	// can be created before it later): the readers move onto it, then the
	// write node goes.
	if testHookDowngrade != nil {
		testHookDowngrade(zr.Node())
	}
	rw.rState, rw.rHold = rHeld, zr
	node, token := zr.Node(), zr.Token()
	wnode := zw.Node()
	rw.lossMu.Lock()
	var moved []*rwHold
	for h := range rw.live {
		if !h.write && h.node == wnode {
			h.node, h.token = node, token
			moved = append(moved, h)
		}
	}
	rw.lossMu.Unlock()
	// A loss of the read node before the readers moved onto it found none
	// of them riding it: apply it here. The loss handler runs after Lost is
	// closed, and we look at Lost after the move, so one of the two sees
	// the other.
	select {
	case <-zr.Lost():
		cause := lossCause(zr)
		for _, h := range moved {
			h.cancel(cause)
		}
	default:
	}
	rw.wNode, rw.wHold = false, nil
	err := zw.Release()
	if rw.nreaders == 0 {
		rw.rState, rw.rHold = rIdle, nil
		err = errors.Join(err, zr.Release())
	}
	rw.wakeLocked()
	return err
}

// testHookDowngrade, when a test sets it, runs in a downgrade between the
// read node's grant and the move of the readers onto it.
var testHookDowngrade func(readNode string)

// onZKLost is zklock's loss handler for both nodes: it cancels the held
// contexts riding on the lost node, at once (possibly on go-zookeeper's
// event goroutine; it takes only lossMu).
func (rw *RWLock) onZKLost(node string, cause error) {
	err := fmt.Errorf("%w: %w", ErrLockLost, cause)
	rw.lossMu.Lock()
	defer rw.lossMu.Unlock()
	for h := range rw.live {
		if h.node == node {
			h.cancel(err)
		}
	}
}

// Token returns the fencing token of the hold held carries: for a write
// hold, the write node's (strictly increasing across writers of the path);
// for a read hold, the node it rides on.
func (rw *RWLock) Token(held context.Context) (int64, error) {
	if err := rw.check(held); err != nil {
		return 0, err
	}
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if h := rw.holdOfLocked(held, true); h != nil {
		return h.token, nil
	}
	if h := rw.holdOfLocked(held, false); h != nil {
		rw.lossMu.Lock()
		defer rw.lossMu.Unlock()
		return h.token, nil
	}
	if rw.closed {
		return 0, ErrClosed
	}
	return 0, ErrNotHolder
}

// Readers reports how many local readers are past the gate.
func (rw *RWLock) Readers() int {
	if rw == nil {
		return 0
	}
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.nreaders
}

// Close ends the lock: holds are cancelled (cause ErrClosed) and their
// nodes released, waiters get ErrClosed, later calls return ErrClosed.
// Close is idempotent.
func (rw *RWLock) Close() error {
	if rw == nil {
		return errNil("RWLock")
	}
	rw.mu.Lock()
	if rw.closed {
		rw.mu.Unlock()
		return nil
	}
	rw.closed = true
	close(rw.done)
	rw.mu.Unlock()
	rw.lossMu.Lock()
	for h := range rw.live {
		h.cancel(ErrClosed)
		delete(rw.live, h)
	}
	rw.lossMu.Unlock()
	return rw.zk.Close()
}
