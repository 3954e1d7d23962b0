package writes_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/writes"
	"github.com/tierlock/tierlock/zklock/internal/writes/memzk"
)

// The explorer's world: the write path under test (a writes.Queue), the
// goroutines it starts (its writer, its timer's callbacks), a connection
// double in front of a ZooKeeper double (memzk), the callers (callers_test.go)
// and the faults, all moved one step at a time by one scheduler.
//
// Determinism. Every goroutine of the write path runs only while the
// scheduler has handed it the baton (run), and gives it back at its next
// call of a blocking Conn method (Connected, Send) or when it ends:
// at any moment exactly one goroutine of the world runs, and what it does
// depends only on the state the steps before made. Time is a counter that
// moves only when a timer fires. So a schedule is its list of steps, and
// the same list replays it.

// waitKind is what a task of the write path waits for.
type waitKind uint8

const (
	waitStart     waitKind = iota // started (Conn.Go, a timer), not yet run
	waitConnected                 // in Conn.Connected
	waitSend                      // in Conn.Send, for its answers
	waitEnded                     // returned
)

// task is a goroutine of the write path.
type task struct {
	id     int
	timer  bool // a timer's callback
	resume chan struct{}
	wait   waitKind
	send   *sendCall
}

// sendCall is one Conn.Send: its requests and their answers.
type sendCall struct {
	reqs    []*wireReq
	answers []writes.Answer
	left    int // requests not yet answered
}

// wireReq is a request handed to the connection: a writer's (req), or a
// caller's own (own makes it at the server, done takes its answer).
type wireReq struct {
	id        int
	req       *writes.Request
	call      *sendCall
	idx       int
	own       func(w *world) writes.Answer
	done      func(w *world, a writes.Answer)
	what      string
	written   bool
	applied   bool
	answer    writes.Answer // what the server answered, when it applied it
	appliedAt int           // the server's order of application (reads too)
	appliedIn int64         // the session it was applied in
	got       writes.Answer // what the writer got (a drop's error, or answer)
}

// connState is the connection double's state.
type connState uint8

const (
	connUp connState = iota
	connDown
	connGone // closed by the Session's Close (a connection of its own)
)

// world is one schedule's state.
type world struct {
	seed      uint64
	cfg       writes.Config
	q         *writes.Queue
	tree      *memzk.Tree
	now       time.Duration
	state     connState
	closed    bool // the Session closed: Connected says false
	sid       int64
	noSession bool // the client learnt its session expired: SessionID says 0
	noTap     bool // the session cannot see its writes: Written is never called
	chroot    int  // the bytes a chroot puts before every path on the wire (Config.PathLen)
	nextID    int64
	budget    budget

	tasks   []*task
	current *task
	yield   chan *task
	timers  []*simTimer

	// unwritten holds requests handed to the client and not yet written,
	// in slots: one Send's requests are handed side by side (their order
	// on the wire is any), everything else in order.
	unwritten [][]*wireReq
	wire      []*wireReq // written, unanswered, in order
	reqs      int
	applies   int

	callers []*caller
	bg      []*bgJob
	recs    recs

	rounds   int // Conn.Send calls
	creates  int // creates queued (each holds a place)
	ended    int // Conn.Ended calls
	failures []string
	log      []string
}

// budget is what faults and ends a schedule may still use.
type budget struct {
	drops, expiries, ctxEnds, opDeletes, reaps, denials, flushes int
	close                                                        bool
}

// conn is the world as the write path's Conn.
func (w *world) conn() writes.Conn {
	return writes.Conn{
		Connected: func() bool {
			w.block(waitConnected)
			return !w.closed && w.state == connUp
		},
		SessionID: func() int64 {
			if w.noSession {
				w.cover(coverSessionZero)
				return 0
			}
			return w.sid
		},
		Send:  w.send,
		Ended: func(sent bool, rtt time.Duration) { w.ended++ },
		DeleteApart: func(node string, owner int64) {
			w.cover(coverHandedOver)
			w.bg = append(w.bg, &bgJob{node: node, owner: owner})
			w.logf("delete apart %s", short(node))
		},
		Queued: func(path, node string, owner int64) { w.recs.queuedDelete(w, path, node, owner) },
		Go: func(fn func()) {
			if w.current != nil && w.current.timer {
				w.cover(coverTimerStart)
			}
			w.spawn(fn)
		},
		Now: func() time.Time { return time.Unix(0, 0).Add(w.now) },
		AfterFunc: func(d time.Duration, f func()) writes.Timer {
			t := &simTimer{w: w, deadline: w.now + d, f: f, armed: true}
			w.timers = append(w.timers, t)
			return t
		},
		Closed:          func() error { return errSessionClosed },
		GoneWithSession: errGone,
	}
}

// send is Conn.Send: the round's requests handed to the connection side
// by side (their order on the wire is any), and the wait for every answer.
func (w *world) send(reqs []*writes.Request) []writes.Answer {
	w.rounds++
	w.checkRound(reqs)
	w.checkSizes(reqs)
	call := &sendCall{answers: make([]writes.Answer, len(reqs)), left: len(reqs)}
	slot := make([]*wireReq, len(reqs))
	for i, r := range reqs {
		slot[i] = w.newReq(&wireReq{req: r, call: call, idx: i, what: describe(r)})
		w.recs.sent(w, slot[i])
	}
	call.reqs = slot
	if w.state == connGone {
		for _, r := range slot {
			w.deliver(r, writes.Answer{Err: zk.ErrConnectionClosed}) // the connection is closed: fails at once
		}
	} else {
		w.unwritten = append(w.unwritten, slot)
	}
	w.current.send = call
	w.block(waitSend)
	return call.answers
}

// spawn starts a task running fn once the scheduler first runs it.
func (w *world) spawn(fn func()) {
	t := &task{id: len(w.tasks), resume: make(chan struct{}), wait: waitStart}
	w.tasks = append(w.tasks, t)
	go func() {
		<-t.resume
		fn()
		t.wait = waitEnded
		w.yield <- t
	}()
}

// block gives the baton back to the scheduler, the current task waiting
// for k, and returns once the scheduler runs it again.
func (w *world) block(k waitKind) {
	t := w.current
	t.wait = k
	w.yield <- t
	<-t.resume
}

// run hands the baton to t until it blocks again or ends.
func (w *world) run(t *task) {
	t.send = nil
	w.current = t
	t.resume <- struct{}{}
	<-w.yield
	w.current = nil
}

// runnable reports whether t can be run now.
func (w *world) runnable(t *task) bool {
	switch t.wait {
	case waitStart:
		return true
	case waitConnected:
		return w.closed || w.state == connUp
	case waitSend:
		return t.send.left == 0
	}
	return false
}

func (w *world) newReq(r *wireReq) *wireReq {
	w.reqs++
	r.id = w.reqs
	return r
}

// hand puts a caller's own request on the connection, behind everything
// handed before it.
func (w *world) hand(what string, own func(w *world) writes.Answer, done func(w *world, a writes.Answer)) {
	r := w.newReq(&wireReq{own: own, done: done, what: what})
	if w.state == connGone {
		w.deliver(r, writes.Answer{Err: zk.ErrConnectionClosed})
		return
	}
	w.unwritten = append(w.unwritten, []*wireReq{r})
}

// write writes request i of the first slot.
func (w *world) write(i int) {
	slot := w.unwritten[0]
	r := slot[i]
	w.unwritten[0] = append(slot[:i:i], slot[i+1:]...)
	if len(w.unwritten[0]) == 0 {
		w.unwritten = w.unwritten[1:]
	}
	r.written = true
	w.wire = append(w.wire, r)
	if r.req != nil && !w.noTap {
		r.req.Written()
	}
	w.logf("write #%d %s", r.id, r.what)
}

// apply makes the first written request not yet applied at the server.
func (w *world) apply() {
	for _, r := range w.wire {
		if r.applied {
			continue
		}
		w.applyReq(r)
		return
	}
}

func (w *world) applyReq(r *wireReq) {
	r.applied = true
	w.applies++
	r.appliedAt, r.appliedIn = w.applies, w.sid
	if r.own != nil {
		r.answer = r.own(w)
		w.logf("apply #%d %s: %v", r.id, r.what, r.answer.Err)
		return
	}
	r.answer = w.serve(r.req)
	w.logf("apply #%d %s: %v", r.id, r.what, r.answer.Err)
	w.recs.applied(w, r)
}

// serve makes a writer's request at the ZooKeeper double, as the
// session's writeLink makes it on go-zookeeper.
func (w *world) serve(r *writes.Request) writes.Answer {
	if !r.Single {
		res, err := w.tree.Multi(w.sid, r.Ops...)
		return writes.Answer{Results: res, Err: err}
	}
	switch o := r.Ops[0].(type) {
	case *zk.CreateRequest:
		node, err := w.tree.Create(w.sid, o.Path, o.Data, o.Flags, o.Acl)
		return writes.Answer{Results: []zk.MultiResponse{{String: node, Error: err}}, Err: err}
	case *zk.DeleteRequest:
		err := w.tree.Delete(w.sid, o.Path, o.Version)
		return writes.Answer{Results: []zk.MultiResponse{{Error: err}}, Err: err}
	}
	panic("explorer: a single request of no kind the writer sends")
}

// answer delivers the answer of the first request on the wire, once the
// server applied it.
func (w *world) answer() {
	r := w.wire[0]
	w.wire = w.wire[1:]
	w.deliver(r, r.answer)
}

func (w *world) deliver(r *wireReq, a writes.Answer) {
	w.logf("answer #%d %s: %v", r.id, r.what, a.Err)
	if r.call != nil {
		r.got = a
		w.recs.answered(w, r, a)
		r.call.answers[r.idx] = a
		r.call.left--
		return
	}
	if r.done != nil {
		r.done(w, a)
	}
}

func (w *world) logf(format string, args ...any) {
	if w.log != nil {
		w.log = append(w.log, fmt.Sprintf(format, args...))
	}
}

// fail records a broken property.
func (w *world) fail(prop, format string, args ...any) {
	w.failures = append(w.failures, prop+": "+fmt.Sprintf(format, args...))
	w.logf("VIOLATION %s: %s", prop, fmt.Sprintf(format, args...))
}

// newWorld makes seed's world: its program, budgets and configuration.
func newWorld(seed uint64, logged bool) *world {
	gen := rand.New(rand.NewPCG(seed, 1))
	w := &world{seed: seed, tree: memzk.New(), yield: make(chan *task), nextID: 1, sid: 1}
	w.cfg = writes.Config{MaxOps: 2 + gen.IntN(5), MaxBytes: 1 << 20, MaxApart: 1 + gen.IntN(3), FoldWait: time.Millisecond,
		OneWrite: gen.IntN(10) == 0, KeepDeletesOnClose: gen.IntN(3) == 0}
	if gen.IntN(2) == 0 {
		w.cfg.MaxBytes = 200 + gen.IntN(600) // a few writes a request; some writes too large alone
	}
	w.noTap = gen.IntN(8) == 0
	// A chroot of 8, 16 or 24 bytes in 3 seeds of 4, from the seed rather
	// than drawn, so that the draws stay what they were: the connection
	// puts it before every path, which the writer counts (l).
	if c := int(seed % 4); c > 0 {
		w.chroot = 8 * c
		w.cfg.PathLen = func(p string) int { return w.chroot + len(p) }
	}
	w.budget = budget{drops: gen.IntN(4), expiries: gen.IntN(3), ctxEnds: gen.IntN(7), opDeletes: gen.IntN(3),
		reaps: gen.IntN(3), denials: gen.IntN(2), flushes: gen.IntN(3), close: gen.IntN(4) == 0}
	if logged {
		w.log = []string{}
	}
	w.recs.init()
	w.q = writes.New(w.conn(), w.cfg)
	w.setUp(gen)
	if w.cfg.OneWrite {
		w.cover(coverOneWrite)
	}
	return w
}
