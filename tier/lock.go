package tier

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/zklock"
)

// Lock is the two-tier reentrant lock. All methods are safe for concurrent
// use; a hold belongs to the context Acquire returned, not to a goroutine.
type Lock struct {
	zk  *zklock.Lock
	g   *admission // tier 1: the gate, one unit
	cfg config
	log *slog.Logger

	current atomic.Pointer[hold] // the hold past the gate, or nil
	life    closing              // Close, ordered against grants (closing, below)

	// Tier-2 state, touched only by the goroutine that holds the gate.
	zkHold   *zklock.Hold // the node, ours while not nil (kept across hand-offs)
	zkSince  time.Time    // when it was acquired
	handoffs int          // consecutive hand-offs on this node

	obs observer
}

// holdOf returns the hold ctx carries if it is this lock's current one.
func (l *Lock) holdOf(ctx context.Context) *hold {
	h, _ := ctx.Value(holdKey{l}).(*hold)
	if h != nil && l.current.Load() == h {
		return h
	}
	return nil
}

// Acquire waits for the gate, then for the ZooKeeper lock, and returns a
// context that carries the hold: it has ctx's values but not its
// cancellation, and it is cancelled when the hold ends (by Release, or by
// a loss: context.Cause then wraps ErrLockLost). Either wait can be
// abandoned through ctx; abandoning the ZooKeeper wait also gives the gate
// back.
//
// Called with a context that holds this lock, Acquire re-enters: it counts
// and returns that context at once, with no ZooKeeper request. Called from
// a holder with any other context it waits for itself, like a sync.Mutex.
func (l *Lock) Acquire(ctx context.Context) (context.Context, error) {
	held, _, err := l.acquire(ctx, true)
	return held, err
}

// TryAcquire is Acquire that never waits on either tier: it reports false,
// holding nothing and leaving no node behind, when the gate is taken or
// another process holds the lock.
func (l *Lock) TryAcquire(ctx context.Context) (context.Context, bool, error) {
	return l.acquire(ctx, false)
}

func (l *Lock) acquire(ctx context.Context, wait bool) (context.Context, bool, error) {
	if l == nil {
		return nil, false, errNil("Lock")
	}
	if ctx == nil {
		return nil, false, ErrNilContext
	}
	if h := l.holdOf(ctx); h != nil {
		if told(h.ctx) != nil {
			return nil, false, context.Cause(h.ctx)
		}
		h.count.Add(1)
		return ctx, true, nil
	}
	start := time.Now()
	if wait {
		l.obs.observe(Event{Kind: Acquiring})
	}
	refused := l.life.isClosed() // closed before it began: refused, not waited for (see waitEnded)
	held, ok, err := l.enter(ctx, wait, start)
	if err != nil && !refused {
		err = waitEnded(ctx, l.Path(), start, l.gateHolder, err)
	}
	if !ok && err != nil {
		l.obs.observe(Event{Kind: Failed, Tier: tierOf(err), Wait: time.Since(start), Err: err, Try: !wait})
	}
	return held, ok, err
}

func (l *Lock) enter(ctx context.Context, wait bool, start time.Time) (context.Context, bool, error) {
	if l.life.isClosed() {
		return nil, false, ErrClosed
	}
	if wait {
		if err := l.g.acquire(ctx, 1, l.life.done); err != nil {
			l.reclaim()
			return nil, false, err
		}
	} else if !l.g.tryAcquire(1) {
		return nil, false, nil
	}
	if trace.Enabled { // a constant: without the tag, no argument is evaluated
		trace.GateEntered(l.zk.Session().Conn(), l.zk.Path(), wait)
	}
	if l.life.isClosed() {
		l.leaveGate()
		return nil, false, ErrClosed
	}
	tier, err := l.takeNode(ctx, wait)
	if err != nil || tier == 0 {
		l.leaveGate()
		return nil, false, err
	}
	h := l.newHold(ctx)
	if testHookPublish != nil {
		testHookPublish(h.zk)
	}
	// Published, then the closed flag looked at: see closing. Close's Swap
	// of current and the CompareAndSwap here take h out exactly once; the
	// one that does ends it.
	err = l.life.publish(func() { l.current.Store(h) }, func() {
		if l.current.CompareAndSwap(h, nil) {
			h.cancel(ErrClosed)
			_ = l.dropZK()
			l.leaveGate()
		}
	})
	if err != nil {
		return nil, false, err
	}
	// A loss that came before the hold was current (onZKLost found another
	// hold, or none) is applied here: onZKLost runs after Lost is closed,
	// and we look at Lost after publishing h, so one of the two sees the
	// other.
	select {
	case <-h.zk.Lost():
		h.cancel(lossCause(h.zk))
	default:
	}
	// The same for a revocation request (onZKRevoked): zklock closes the
	// node's channel before it calls the handler.
	select {
	case <-h.zk.Revoked():
		h.revoke()
	default:
	}
	l.obs.observe(Event{Kind: Acquired, Tier: tier, Wait: time.Since(start), Try: !wait})
	return h.ctx, true, nil
}

// newHold makes the hold of the gate's holder, riding on l.zkHold.
func (l *Lock) newHold(ctx context.Context) *hold {
	zh := l.zkHold
	h := &hold{start: time.Now(), zk: zh, node: zh.Node(), token: zh.Token()}
	if l.cfg.revocable {
		h.revoked = make(chan struct{})
	}
	h.count.Store(1)
	h.ctx, h.cancel = h.judged.begin(ctx, holdKey{l}, h, zh)
	return h
}

// takeNode gives the gate's holder the node: the one a hand-off carries,
// unless it was lost or revoked meanwhile, or a new one. It returns the
// tier that served, or 0 when a try found the node taken.
func (l *Lock) takeNode(ctx context.Context, wait bool) (Tier, error) {
	if zh := l.zkHold; zh != nil {
		select {
		case <-zh.Lost():
			// The node we carried was lost between holders.
			l.dropZK()
		case <-zh.Revoked(): // nil, never ready, without WithRevocable
			// Its revocation was requested after the hand-off was decided
			// (handoffAllowed): give the node back rather than pass it on,
			// and queue behind the process that asked.
			l.dropZK()
		default:
			l.handoffs++
			if trace.Enabled {
				trace.HandoffRide(l.zk.Session().Conn(), l.zk.Path(), zh.Node())
			}
			return TierHandoff, nil
		}
	}
	if err := ctx.Err(); err != nil && wait {
		return 0, err // the gate came as the wait ended: it ended in tier 1
	}
	if testHookAskingNode != nil {
		testHookAskingNode(l)
	}
	zh, ok, err := zkAcquire(ctx, l.zk, wait)
	if err != nil || !ok {
		return 0, err // acquire makes it a WaitError
	}
	l.zkHold, l.zkSince, l.handoffs = zh, time.Now(), 0
	return TierZooKeeper, nil
}

// zkAcquire acquires zl: waiting, or trying.
func zkAcquire(ctx context.Context, zl *zklock.Lock, wait bool) (*zklock.Hold, bool, error) {
	if wait {
		zh, err := zl.Acquire(ctx)
		return zh, err == nil, err
	}
	return zl.TryAcquire(ctx)
}

// dropZK gives up the node (gate holder only) and returns Release's error.
func (l *Lock) dropZK() error {
	zh := l.zkHold
	l.zkHold = nil
	return zh.Release()
}

// Release ends one Acquire of the hold held carries. The last one releases
// the ZooKeeper node first and then the gate (or, with WithHandoff and a
// local waiter, passes both on). Releasing with a context that does not
// hold this lock, or more often than acquired, returns ErrNotHolder and
// changes nothing; a context that never carried a hold of this lock (the
// one passed to Acquire, say) is also logged at Warn (see misuse.go). If
// the hold was lost, the last Release still frees the gate and returns an
// error wrapping ErrLockLost.
func (l *Lock) Release(held context.Context) error {
	if l == nil {
		return errNil("Lock")
	}
	if held == nil {
		return ErrNilContext
	}
	h := l.holdOf(held)
	if h == nil {
		if held.Value(holdKey{l}) == nil {
			return warnNotHolder(l.log, "lock", "Acquire") // misuse.go
		}
		return l.life.notHolder()
	}
	for {
		n := h.count.Load()
		if n <= 0 {
			return ErrNotHolder
		}
		if h.count.CompareAndSwap(n, n-1) {
			if n > 1 {
				return nil
			}
			break
		}
	}
	if testHookReleasing != nil {
		testHookReleasing(l)
	}
	if !l.current.CompareAndSwap(h, nil) {
		return l.life.notHolder() // Close took h out first
	}
	txnsOver := h.txns.end()
	cause := context.Cause(h.ctx) // before the hold ends: a loss, or nil
	h.cancel(errReleased)
	l.obs.observe(Event{Kind: Released, Held: time.Since(h.start)})
	err := l.leave(txnsOver)
	err = reportLoss(err, cause)
	return err
}

// leave undoes the tiers of a hold just released: the node first, then
// the gate, unless a bounded hand-off passes both to a local waiter.
// txnsOver closes once the hold's guarded writes in flight are over.
func (l *Lock) leave(txnsOver <-chan struct{}) error {
	// handOff passes the gate, and with it the node, to the next local
	// waiter in one step; if none is waiting any more, we still hold both.
	if l.handoffAllowed() && l.settled(txnsOver) && l.g.handOff(1) {
		if trace.Enabled {
			trace.GatePassed(l.zk.Session().Conn(), l.zk.Path())
		}
		return nil
	}
	var err error
	if l.zkHold != nil {
		err = l.dropZK()
	}
	l.leaveGate()
	if err = l.life.releaseErr(err); err != nil && err != ErrClosed {
		return fromZK(fmt.Errorf("release %s: %w", l.Path(), err))
	}
	return err
}

// settled waits, before a hand-off, until the releasing hold's guarded
// writes in flight are over: the next holder rides on the same node, so
// the server's guard cannot tell its writes from the previous holder's
// (see txnGate). It reports whether the hand-off is still allowed. A loss
// of the node ends the wait: the next holder will not ride on it.
func (l *Lock) settled(txnsOver <-chan struct{}) bool {
	select {
	case <-txnsOver:
	case <-l.zkHold.Lost():
	}
	return l.handoffAllowed()
}

func (l *Lock) handoffAllowed() bool {
	if l.cfg.maxHandoffs == 0 || l.zkHold == nil || l.g.waiters() == 0 || l.life.isClosed() {
		return false
	}
	if l.handoffs >= l.cfg.maxHandoffs || time.Since(l.zkSince) >= l.cfg.maxHold {
		return false
	}
	select {
	case <-l.zkHold.Lost():
		return false
	case <-l.zkHold.Revoked():
		return false // a revoked node goes back to ZooKeeper
	default:
		return true
	}
}

// The two rules every tier lock (Lock, RWLock, Semaphore) shares, kept
// here with the lock that runs them on every acquisition and release: the
// closed state, ordered against grants, and the observer.

// closing is a lock's closed state, and the one rule by which every tier
// recipe (Lock, RWLock's readers and writers, Semaphore) orders Close
// against a grant that is being published.
//
// The race: a grant comes back from ZooKeeper, and before its hold is
// visible to Close, Close runs: it finds no hold to cancel, gives the
// node up (through the zklock lock's Close), and the grant then publishes
// a hold that nobody will ever cancel, while another process is granted
// the lock. (Checking the flag before publishing does not help: Close can
// run between the check and the publication.)
//
// The rule, as x/sync's semaphore orders a cancel against a grant: the
// grant publishes first and looks at the flag after; Close sets the flag
// first and looks for published holds after. Both flag operations are
// sequentially consistent atomics, so of the two, at least one sees the
// other: either Close finds the hold (and ends it), or the grant finds the
// flag set and withdraws the hold itself. When both see each other, both
// try to take the hold out of where it was published, and exactly one
// succeeds (a CompareAndSwap, or a delete under a mutex); that one ends it.
type closing struct {
	closed atomic.Bool
	done   chan struct{} // closed by begin: ends the waits in tier 1
}

func (c *closing) isClosed() bool { return c.closed.Load() }

// publish makes a granted hold visible to Close (add), then looks at the
// flag. It returns nil when Close had not begun: a Close that comes later
// finds the hold. Otherwise it calls withdraw, which takes the hold back
// unless Close already took it, and then undoes what the grant took (the
// node, the units of tier 1), and publish returns ErrClosed.
func (c *closing) publish(add, withdraw func()) error {
	add()
	if !c.closed.Load() {
		return nil
	}
	withdraw()
	return ErrClosed
}

// releaseErr is what a Release racing Close reports for its node's
// release: a node that Close gave up first (zklock.ErrNotHeld once closed)
// is ErrClosed, as for a Release that comes after Close.
func (c *closing) releaseErr(err error) error {
	if errors.Is(err, zklock.ErrNotHeld) && c.isClosed() {
		return ErrClosed
	}
	return err
}

// reportLoss is what the last Release of a hold returns: err, unless the
// hold was lost (cause, its context's cause before it ended, wraps
// ErrLockLost) and err does not say so already.
func reportLoss(err, cause error) error {
	if cause != nil && errors.Is(cause, ErrLockLost) && !errors.Is(err, ErrLockLost) {
		return cause
	}
	return err
}

// observe tells the observer (events.go) of ev on the caller's goroutine.
func (o *observer) observe(ev Event) {
	if o.fn != nil {
		ev.Path = o.path
		o.fn(ev)
	}
}

// leaveGate gives the gate back, and records it (internal/trace) in a
// build with the tierlocktrace tag.
func (l *Lock) leaveGate() {
	if trace.Enabled {
		trace.GateLeft(l.zk.Session().Conn(), l.zk.Path())
	}
	l.g.release(1)
}
