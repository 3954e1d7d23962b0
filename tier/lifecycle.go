package tier

import (
	"time"

	"github.com/tierlock/tierlock/zklock"
)

// A Lock's making and ending (New, Close), and what zklock calls back
// (onZKLost) or an ended wait runs (reclaim).

// New returns a two-tier lock on path (see zklock.New for the path rules).
func New(s *zklock.Session, path string, opts ...Option) (*Lock, error) {
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	return newLock(s, path, cfg)
}

func newLock(s *zklock.Session, path string, cfg config) (*Lock, error) {
	l := &Lock{g: newAdmission(1), cfg: cfg, log: s.Logger().With("lock", path), life: newClosing(),
		obs: observer{fn: cfg.observer, path: path}}
	opts := append(cfg.zkOpts[:len(cfg.zkOpts):len(cfg.zkOpts)], zklock.WithLossHandler(l.onZKLost))
	if cfg.revocable {
		opts = append(opts, zklock.WithRevocationHandler(l.onZKRevoked))
	}
	zl, err := zklock.New(s, path, opts...)
	if err != nil {
		return nil, fromZK(err)
	}
	l.zk = zl
	return l, nil
}

// Path returns the ZooKeeper path of the lock.
func (l *Lock) Path() string {
	if l == nil {
		return ""
	}
	return l.zk.Path()
}

// onZKLost is zklock's loss handler: it runs at the moment the ZooKeeper
// hold is found lost, possibly on go-zookeeper's event goroutine, and
// cancels the held context of the hold riding on that node, so that work
// under the lock sees ctx.Done() with no goroutine hop in between. A hold
// on another node (a later acquisition) is left alone. The observer, user
// code, is told from a goroutine of its own.
func (l *Lock) onZKLost(node string, cause error) {
	if closedByTier(cause) {
		return
	}
	err := lossErr(cause)
	if h := l.current.Load(); h != nil && h.node == node {
		h.cancel(err)
	}
	l.obs.notify(Event{Kind: Lost, Err: err})
}

// reclaim gives the node up when the gate is free with the node still
// ours: a hand-off's receiver whose wait ended as it was granted gives the
// gate back (the admission undoes the grant) after its giver has returned,
// and no local waiter may come to ride the node or give it up. Called by
// every wait that failed, it takes the gate only if it is free and nobody
// queues for it (a queued waiter was granted instead, and rides the node).
func (l *Lock) reclaim() {
	if !l.g.tryAcquire(1) {
		return
	}
	if l.zkHold != nil {
		_ = l.dropZK()
	}
	l.g.release(1)
}

// Close ends the lock: a current hold is cancelled (cause ErrClosed) and its
// node released, waiters get ErrClosed, and later calls return ErrClosed.
// Close is idempotent.
func (l *Lock) Close() error {
	if l == nil {
		return errNil("Lock")
	}
	if !l.life.begin() {
		return nil
	}
	if h := l.current.Swap(nil); h != nil {
		// The hold ends here, and its Release will find nothing (ErrClosed):
		// tell the observer now, or a holders count would never come down.
		// Swap and Release's CompareAndSwap take h out of current exactly
		// once between them, so the hold is reported ended exactly once.
		h.cancel(ErrClosed)
		l.obs.observe(Event{Kind: Released, Held: time.Since(h.start)})
	}
	err := l.zk.Close()
	l.obs.close()
	return err
}

// notHolder is what a Release of a context that carried a hold, but no
// longer a current one, returns: ErrClosed once the lock is closed (Close
// ended the hold, before this Release or while it ran: Close marks the
// lock closed before it takes the hold out, so the flag is set by then),
// as the hold was the caller's; ErrNotHolder otherwise (released already).
func (c *closing) notHolder() error {
	if c.isClosed() {
		return ErrClosed
	}
	return ErrNotHolder
}

func newClosing() closing { return closing{done: make(chan struct{})} }

// begin marks the lock closed, before Close looks for published holds,
// and ends tier-1 waits. It reports false when the lock was closed
// already (Close is idempotent).
func (c *closing) begin() bool {
	if c.closed.Swap(true) {
		return false
	}
	close(c.done)
	return true
}
