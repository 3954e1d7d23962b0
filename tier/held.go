package tier

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierlock/tierlock/internal/closed"
	"github.com/tierlock/tierlock/zklock"
)

// What a Lock's holder and observer are told: the hold's token, count and
// revocation, and the events.

// onZKRevoked is zklock's revocation handler: it runs when a revocation
// request for the node is seen (on a goroutine of the session's, after
// the node's zkRevoked channel is closed) and tells the hold riding on
// that node, if it is current; a hold that becomes current later finds
// the channel closed (enter). Sequential consistency of the atomics makes
// one of the two see the other: enter stores the hold, then reads the
// channel; this closes the channel, then loads the hold.
func (l *Lock) onZKRevoked(node string) {
	if h := l.current.Load(); h != nil && h.node == node {
		h.revoke()
	}
	l.obs.notify(Event{Kind: Revoked})
}

// Revoked returns a channel that is closed when a revocation request for
// the hold held carries arrives (see WithRevocable): the holder was asked
// to release. It is a request, not a cancellation: held stays live, and
// the hold lasts until the holder's Release. The channel is nil (it never
// closes) for a lock made without WithRevocable, and closed when held does
// not carry a current hold of this lock (a foreign or released context, a
// nil one, a closed lock), so that a caller selecting on it finds out.
func (l *Lock) Revoked(held context.Context) <-chan struct{} {
	if l == nil || held == nil {
		return closed.Chan
	}
	h := l.holdOf(held)
	if h == nil {
		return closed.Chan
	}
	return h.revoked // nil without WithRevocable
}

// Token returns the fencing token of the hold held carries: the zxid that
// orders this hold among all holders of the path (see zklock.Hold.Token).
// Local hand-offs keep the node, and so the token. A hold found lost as
// Token is asked (judged then: see zklock.Hold.Lost) has no token to fence
// a write with: Token returns 0 and the loss, wrapping ErrLockLost.
func (l *Lock) Token(held context.Context) (int64, error) {
	if l == nil {
		return 0, errNil("Lock")
	}
	if held == nil {
		return 0, ErrNilContext
	}
	h := l.holdOf(held)
	if h == nil {
		if l.life.isClosed() && held.Value(holdKey{l}) != nil {
			return 0, ErrClosed
		}
		return 0, ErrNotHolder
	}
	if err := lostCause(h.ctx); err != nil {
		return 0, err
	}
	return h.token, nil
}

// HoldCount reports how many times the hold ctx carries has been acquired
// and not yet released: 0 when ctx does not hold this lock.
func (l *Lock) HoldCount(ctx context.Context) int {
	if l == nil || ctx == nil {
		return 0
	}
	if h := l.holdOf(ctx); h != nil {
		return int(h.count.Load())
	}
	return 0
}

// testHookPublish, when a test sets it, runs in enter with the node's hold
// just before the hold is published (made current).
var testHookPublish func(*zklock.Hold)

// testHookAskingNode, when a test sets it, runs in enter once the gate is
// taken and the lock found open, just before zklock is asked for the
// node: where a Close refuses that ask.
var testHookAskingNode func(*Lock)

// testHookReleasing, when a test sets it, runs in Release between the
// hold's count reaching zero and taking the hold out of current: where a
// Close may take it first.
var testHookReleasing func(*Lock)

// lossCause is why zh was lost.
func lossCause(zh *zklock.Hold) error {
	if err := zh.Err(); err != nil {
		return fromZK(err)
	}
	return ErrLockLost
}

// hold is one goroutine's (one context's) hold, reentrant by count.
type hold struct {
	count  atomic.Int32
	ctx    context.Context // &judged
	cancel context.CancelCauseFunc
	judged judged
	start  time.Time
	zk     *zklock.Hold // the ZooKeeper hold this hold rides on
	node   string       // its node
	token  int64        // its fencing token, fixed for the hold's life
	txns   txnGate

	revoked    chan struct{} // closed on a revocation request for node; nil without WithRevocable
	revokeOnce sync.Once
}

// revoke closes h.revoked once.
func (h *hold) revoke() {
	h.revokeOnce.Do(func() { close(h.revoked) })
}

type holdKey struct{ l *Lock }

// txnGate orders a hold's guarded writes against its hand-off. (A hold
// that ends with its node needs no gate: its writes go out on that node
// alone, through zklock.Hold.Txn, and the server orders them against the
// node's delete.)
//
// A Txn enters (begin) after finding its hold current; Release, having
// made the hold not current, closes the gate (end) and, before a hand-off,
// waits until every request that entered has completed at the server or
// failed (idle). The mutex is the happens-before edge: either begin runs
// first, and its count is seen by end, so idle waits for that request; or
// end runs first, and begin sees ended and refuses, sending nothing. So
// no guarded write of a hold can be applied after the next local holder
// got the hold. The count drops when the request ends, not when Txn
// returns: a Txn whose context ended first leaves its request in flight,
// and that request still counts.
type txnGate struct {
	mu    sync.Mutex
	ended bool
	n     int           // requests admitted and not over
	idle  chan struct{} // made by end, closed once ended and n == 0
}

// begin admits one request, unless the hold was released.
func (g *txnGate) begin() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ended {
		return false
	}
	g.n++
	return true
}

// done ends an admitted request.
func (g *txnGate) done() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.ended && g.n == 0 {
		close(g.idle)
	}
}

// end admits no more requests and returns a channel closed once the
// admitted ones are over.
func (g *txnGate) end() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.ended {
		g.ended = true
		g.idle = make(chan struct{})
		if g.n == 0 {
			close(g.idle)
		}
	}
	return g.idle
}

// judged is a hold's context: every question asked of it (Done, Err,
// Value, and so context.Cause, Token, Txn) first judges the ZooKeeper hold
// it rides on at that moment (zklock.Hold.Err: the lease on the monotonic
// clock), and a loss found so cancels it, with the loss as its cause,
// before the answer is read. A process resumed from a stop longer than its
// session runs its jobs' timers and its lease's in no set order: a job
// asking its held context first was told the hold stood, its Release nil,
// while another process had held the lock for seconds. The context is
// cancelled here, not only by the lock's loss handler: the zklock hold
// ends before its handler runs, and a question asked between the two
// must not find the hold lost below and standing here. A context derived
// from it with a cancellation of its own (WithTimeout) answers from its
// own state, which the hold's loss cancels as soon as anything asks.
type judged struct {
	context.Context                          // the hold's own: context.WithCancelCause's
	cancel          context.CancelCauseFunc  // its cancel
	zk              interface{ Err() error } // the ZooKeeper hold (or semaphore lease)
}

// begin makes c the context of a hold carried under key as val, with
// ctx's values and not its cancellation, judged by zh (see judged), and
// returns it with its cancel. c is a field of the hold's own struct, made
// with it: a hand-off allocates no more than it did before holds were
// judged.
func (c *judged) begin(ctx context.Context, key, val any, zh interface{ Err() error }) (context.Context, context.CancelCauseFunc) {
	inner, cancel := context.WithCancelCause(context.WithValue(context.WithoutCancel(ctx), key, val))
	*c = judged{Context: inner, cancel: cancel, zk: zh}
	return c, cancel
}

// judge judges the hold, once its context has not ended yet.
func (c *judged) judge() {
	if c.Context.Err() != nil {
		return // ended: released, closed or lost, and told
	}
	if err := c.zk.Err(); err != nil && !closedByTier(err) {
		c.cancel(fromZK(err)) // as the loss handler would (lossErr)
	}
}

func (c *judged) Done() <-chan struct{} { c.judge(); return c.Context.Done() }
func (c *judged) Err() error            { c.judge(); return c.Context.Err() }

// Value judges for any key but a tier lock's own: those are the locks'
// lookups of the hold (holdOf, at every re-entry and release), followed,
// where the answer depends on the hold standing, by a judged question
// (the last Release's cause, Token, Txn). A judgment reads the clock,
// which costs more than a re-entry may (under 100 ns).
func (c *judged) Value(key any) any {
	switch key.(type) {
	case holdKey, rwKey, semKey, multiKey:
	default:
		c.judge()
	}
	return c.Context.Value(key)
}

// lostCause judges the hold whose context is held and returns its loss
// (wrapping ErrLockLost), or nil while it stands or ended otherwise (a
// release or a Close, which the caller tells apart).
func lostCause(held context.Context) error {
	if held.Err() == nil {
		return nil
	}
	if cause := context.Cause(held); errors.Is(cause, ErrLockLost) {
		return cause
	}
	return nil
}

// toldCause is ctx's cause as told so far, not judged (see told).
func toldCause(ctx context.Context) error {
	if j, ok := ctx.(*judged); ok {
		return context.Cause(j.Context)
	}
	return context.Cause(ctx)
}

// told is ctx's error as told so far, not judged: a re-entry's look, which
// must not read the clock (see judged.Value). A re-entry counts on a hold
// whose lease may have run out untold; whatever the holder asks next of
// it judges it.
func told(ctx context.Context) error {
	if j, ok := ctx.(*judged); ok {
		return j.Context.Err()
	}
	return ctx.Err()
}
