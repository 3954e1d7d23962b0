package zklock

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
// fn runs on the goroutine that called Acquire, which is where the waiter
// reads the queue: one report at a time, in order, and never after Acquire
// returned. A slow fn delays only its own Acquire: the waiter arms its
// watch after fn returns, and a change made meanwhile is seen then (the
// watch's read finds the predecessor gone, or the next listing shows it).
// While it runs, a cancelled ctx is not noticed. fn must not call methods
// of the Lock.
func WithPositionHandler(fn func(Position)) Option {
	return func(c *lockConfig) { c.onPosition = fn }
}

// positions reports one queued node's place to the handler on the
// caller's goroutine, so reports come in order and never after Acquire
// returned; without a handler waitTurn makes no call.
type positions struct {
	fn   func(Position)
	node string
	dir  string // the lock path, for Holder
	last Position
	any  bool // last is set
}

// newPositions returns node's reporter; nil without a handler, or a wait.
func (l *Lock) newPositions(node string, wait bool) *positions {
	if l.onPosition == nil || !wait {
		return nil
	}
	return &positions{fn: l.onPosition, node: node, dir: l.path}
}

// seen reports our node at index i of q, going or not, unless that is
// the position reported last (a re-check that finds nothing new).
func (p *positions) seen(q []entry, i int, goes bool) {
	pos := Position{Node: p.node, Ahead: i, Queued: len(q), Holder: p.dir + "/" + q[0].name, Leads: goes}
	if p.any && pos == p.last {
		return
	}
	p.last, p.any = pos, true
	p.fn(pos)
}
