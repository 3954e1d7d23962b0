package zklock

import (
	"context"
	"sync"

	"github.com/tierlock/tierlock/mutexbool"
)

// Position is where an Acquire's node stands in the lock's queue, as of the
// latest listing of the queue the waiter read (CURATOR-592).
type Position struct {
	// Node is the full path of our node. A node that vanished while queued
	// is replaced by a new one (Acquire queues again): Node tells them apart.
	Node string
	// Ahead is how many nodes are queued before ours (0: ours is first).
	Ahead int
	// Queued is how many nodes are in the queue, ours included.
	Queued int
	// Holder is the full path of the first node in the queue: the holder
	// of a mutex (ours when Ahead is 0); for a read/write lock or a
	// semaphore, the oldest of possibly several holders.
	Holder string
	// Leads reports that our node may go now: Acquire is about to take
	// the hold. It is set on the last report of a successful Acquire (a
	// failure at that moment, such as a loss of the session, can still
	// follow it).
	Leads bool
}

// WithPositionHandler has Acquire tell fn where its node stands in the
// queue: once when the node is created (from the listing pipelined behind
// the create), then whenever the position read on a later listing differs
// from the last one, the last report of a successful Acquire having Leads
// set. A nil fn reports nothing. TryAcquire, which never waits, reports
// nothing.
//
// Reporting sends no request: the position comes from the listings the
// waiter reads anyway, when its predecessor goes and at each re-check
// (WithRecheckInterval). A waiter far back hears nothing while nodes
// ahead of its predecessor come and go (that is the price of no herd); it
// catches up at its next re-check.
//
// fn runs on the goroutine that called Acquire, between its waits, one
// report at a time and in order, and never after Acquire returned: the
// caller is blocked in Acquire anyway, so its own goroutine is where its
// progress belongs. A slow fn does not hold up the queue or the waiter's
// watch (reports made meanwhile are folded into the latest one); it delays
// only its own Acquire's return, and while it runs a cancelled ctx is not
// noticed. fn must not call methods of the Lock.
func WithPositionHandler(fn func(Position)) Option {
	return func(c *lockConfig) { c.onPosition = fn }
}

// positions carries one queued node's reports from the goroutines that read
// the queue (the caller's in attempt, the waiter's in waitTurn) to the
// caller's goroutine, which alone calls fn. A nil *positions reports
// nothing, so the queue's code calls it unconditionally.
type positions struct {
	fn   func(Position)
	node string
	dir  string // the lock path, for Holder

	mu        sync.Mutex
	last      Position           // the latest position seen
	any       bool               // last is set
	fresh     bool               // last is not yet delivered
	interrupt context.CancelFunc // ends the caller's current wait in await; nil outside it
}

// newPositions returns the reporter of node, or nil when there is no
// handler or the acquisition does not wait.
func (l *Lock) newPositions(node string, wait bool) *positions {
	if l.onPosition == nil || !wait {
		return nil
	}
	return &positions{fn: l.onPosition, node: node, dir: l.path}
}

// first reports the position in enqueue's listing, on the caller's
// goroutine; a nil q (no usable listing) leaves the first report to the
// waiter.
func (p *positions) first(rule queueRule, q []entry, name string) {
	if p == nil {
		return
	}
	if i := position(q, name, ""); i >= 0 {
		goes, _ := rule(q, i)
		p.seen(q, i, goes)
		p.deliver()
	}
}

// seen records that our node is at index i of q and may go or not. It runs
// on whichever goroutine read q and never calls fn: it only wakes the
// caller, if it is waiting in await.
func (p *positions) seen(q []entry, i int, goes bool) {
	if p == nil {
		return
	}
	pos := Position{Node: p.node, Ahead: i, Queued: len(q), Holder: p.dir + "/" + q[0].name, Leads: goes}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.any && pos == p.last {
		return // re-checks that find nothing new report nothing
	}
	p.last, p.any, p.fresh = pos, true, true
	if p.interrupt != nil {
		p.interrupt()
	}
}

// deliver calls fn with the latest position if it was not delivered yet.
// Only the caller's goroutine calls it.
func (p *positions) deliver() {
	p.mu.Lock()
	pos, fresh := p.last, p.fresh
	p.fresh = false
	p.mu.Unlock()
	if fresh {
		p.fn(pos)
	}
}

// await is signal.Get(ctx) that delivers reports while it waits. Each wait
// runs under a child of ctx whose cancel seen calls: a report made after
// the wait began ends it, so the caller delivers it and waits again; one
// made before is found fresh under mu (seen and this check take mu in turn,
// so either seen sees interrupt set or we see fresh set). When signal is
// set, the waiter's last report (its lead, made before it set signal)
// is delivered before returning.
func (p *positions) await(ctx context.Context, signal *mutexbool.BooleanMutex) error {
	if p == nil {
		return signal.Get(ctx)
	}
	for {
		p.deliver()
		wctx, cancel := context.WithCancel(ctx)
		p.mu.Lock()
		p.interrupt = cancel
		fresh := p.fresh
		p.mu.Unlock()
		var err error
		if !fresh {
			err = signal.Get(wctx)
		}
		p.mu.Lock()
		p.interrupt = nil
		p.mu.Unlock()
		cancel()
		switch {
		case err == nil && !fresh:
			p.deliver()
			return nil
		case ctx.Err() != nil && err != nil:
			return ctx.Err() // a report not yet delivered is dropped: Acquire returns
		}
	}
}
