package session

import (
	"container/heap"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/mono"
	"github.com/tierlock/tierlock/zklock/internal/wire"
)

// Running one schedule inside a synctest bubble: the floor is made and
// started over the double as Dial would over go-zookeeper, the steps and
// the double's own actions are put on the agenda, and the driver takes
// them in time order, letting the floor settle (settle) before each. The
// floor's goroutines run on the bubble's clock: its timers (the lease's
// deadline, the renewer's period, Grant's waits, Close's grace) fire when
// virtual time reaches them, with the driver asleep until its next action
// or until the floor hands it something (poke).

// outcome is what a schedule did and what its checks found.
type outcome struct {
	trace []string
	fails []string
}

// history is what the double saw, for the checks.
type history struct {
	ups     []span          // connections with a session
	dials   []time.Duration // connections made (StateConnected told), each before its connect request
	drops   []time.Duration // the client lost a connection that had a session
	learnt  []learnt        // the client learnt its session expired
	grants  []grantRec      // the connect answers that gave a session, with the timeout each granted
	closeAt time.Duration   // the floor's Close began (-1: never)
	ntx     int
}

// grantRec is a session timeout granted session sid, known from at on.
type grantRec struct {
	at  time.Duration
	sid int64
	T   time.Duration
}

type span struct {
	from, to time.Duration // to -1: still up
	sid      int64
}

type learnt struct {
	at time.Duration
	id int64
}

// runSchedule runs seed's schedule (its steps if steps is nil), in a bubble.
func runSchedule(seed uint64, steps []step, keep bool) outcome {
	cfg, drawn := draw(seed)
	if steps == nil {
		steps = drawn
	}
	return runConfig(cfg, seed, steps, keep)
}

// runConfig runs steps under cfg, the double drawing from seed.
func runConfig(cfg leaseConfig, seed uint64, steps []step, keep bool) outcome {
	w := &world{cfg: cfg, rng: rand.New(rand.NewPCG(seed, 2)), t0: time.Now(), keep: keep,
		wake: make(chan struct{}, 1), srv: newServer()}
	w.hist.closeAt = -1
	w.c.timeout = cfg.asked
	w.granted.Store(int64(cfg.asked))
	defer w.unstepWall()
	fc := Config{Timeout: cfg.asked, Logger: slog.New(lineHandler{w}), ExpiryOnly: cfg.expiryOnly,
		MaxRetryWait: time.Second, NoPipelining: cfg.noPipelining, Hooks: w.hooks()}
	if cfg.declared {
		fc.ServerTick = cfg.tick
	}
	if cfg.digests {
		fc.Digests = []Digest{{User: "explorer", Password: "secret"}}
	}
	w.logf("seed %d: T %v (asked %v), tick %v (declared %v, probed %v), members %v, syncLimit×tick %v, expiry only %v, wrap %v (events %v), healthy %v, late %.1f, digests %v, no pipelining %v",
		seed, cfg.T, cfg.asked, cfg.tick, cfg.declared, cfg.probed, cfg.members, cfg.orphanAfter, cfg.expiryOnly, cfg.wrap, cfg.events, cfg.healthy, cfg.pLate,
		cfg.digests, cfg.noPipelining)
	if cfg.wrap {
		// As Wrap makes it, over the double rather than a *zk.Conn, which
		// has its first session, as Dial's has when it returns (so the
		// floor never sees a connection lost before its first session:
		// outage.go's noteTCP, which (e) does not model), and whose
		// channel, if any, its caller drained.
		w.s = newFloor(nil, false, fc)
		w.s.start(dbl{w}, nil)
		w.connect()
		if cfg.events {
			w.events = make(chan zk.Event, 6)
		}
		w.s.st.catchUp()
		w.s.Go(func() { w.s.st.poll(w.events) })
	} else {
		w.tap = wire.New(wire.Config{})
		w.s = newFloor(w.tap, true, fc)
		w.s.start(dbl{w}, nil)
		w.connect()
	}
	defer w.parkWriters()() // before any write: a member's first comes at a step
	if cfg.probed {
		// What the probe reads (tickprobe.go): the first member's least grant.
		w.s.lease.setTick(cfg.members[0].lo / 2)
	}
	w.ag.at(cfg.phase, w.leaderPing)
	if cfg.digests {
		// As Dial does once its session is made (Wrap at once, in the
		// background): the floor's credential, through AddAuth.
		w.s.Go(func() { _ = w.s.authenticate(w.s.life.ctx) })
	}
	for _, st := range steps {
		w.ag.at(st.at, func() { w.take(st) })
	}
	w.ag.at(closeAt*cfg.T, w.startClose)
	w.drive()
	// Whatever the floor left armed (a write path's timer) fires now.
	time.Sleep(2 * wire.CloseGrace)
	w.settle()
	for _, a := range w.members {
		a.cancel()
	}
	fails := w.check()
	if keep {
		w.trace = append(w.trace, w.summary()...)
	}
	return outcome{trace: w.trace, fails: fails}
}

// summary is what the floor told, for the trace: each member's grant and
// losses, and the lines it logged.
func (w *world) summary() []string {
	var out []string
	for _, a := range w.members {
		out = append(out, fmt.Sprintf("member %d (%s, session %#x): grant %v at %v (called %v), lost %v, released %v",
			a.n, a.node, a.owner, a.err, a.returned, a.called, a.loses, a.forgot))
	}
	for _, l := range w.lines {
		out = append(out, fmt.Sprintf("%12.6fs log: %s", l.at.Seconds(), l.msg))
	}
	waits, lapses, late, _, _, _ := w.s.lease.Stats()
	return append(out, fmt.Sprintf("lease: %d waits, %d lapses, %d late proofs", waits, lapses, late))
}

// drive takes the agenda's actions in time order until the floor is
// closed and every goroutine of the explorer has ended.
func (w *world) drive() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		w.settle()
		w.enqueue()
		if w.tidy() {
			continue
		}
		if w.finished() {
			return
		}
		var wake <-chan time.Time
		if a := w.ag.peek(); a != nil {
			if a.at <= w.now() {
				w.ag.pop()
				a.fn()
				continue
			}
			t.Reset(a.at - w.now())
			wake = t.C
		}
		select {
		case <-wake:
		case <-w.wake:
			t.Stop()
		}
	}
}

// finished reports whether the floor is closed and the explorer's
// goroutines are over, and under Wrap the floor's own too: its Close
// leaves the caller's connection open, and the guaranteed deletes of the
// nodes it gave up go on until done (deletes.go), over the double.
func (w *world) finished() bool {
	w.mu.Lock()
	done := w.hist.closeAt >= 0 && w.live == 0
	w.mu.Unlock()
	if !done || !w.cfg.wrap {
		return done
	}
	g := &w.s.life.bg
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n == 0
}

// take takes one step.
func (w *world) take(st step) {
	w.logf("step %v", st)
	now := w.now()
	switch st.kind {
	case "aq":
		w.startAcquire()
	case "rl":
		w.release()
	case "x":
		w.cancelOne()
	case "tx":
		w.startTxn()
	case "bz":
		for t := now; t < now+st.d; t += w.cfg.T / 64 {
			w.ag.at(t, w.startTxn)
		}
	case "dc":
		w.c.downTill = now + st.d
		w.drop("dropped by the explorer", nil, nil)
	case "rv":
		w.c.slowNext = max(st.d, time.Nanosecond)
		w.drop("dropped by the explorer, the next answer slow", nil, nil)
	case "nd":
		w.nearStep(st.d)
	case "pt":
		w.partition(st.d, true, true)
	case "pl":
		w.partition(st.d, true, false)
	case "pf":
		w.partition(st.d, false, true)
	case "st":
		w.c.stallFrom, w.c.stallTill = now, now+st.d
	case "bh":
		w.c.bhFrom, w.c.bhTill = now, now+st.d
	case "ws":
		w.walls = append(w.walls, mono.StepWall(st.d))
	case "cl":
		w.startClose()
	}
}

// unstepWall steps the wall clock back by what the schedule stepped it:
// the step is the process's (mono.StepWall), which only the seeded bug
// wall-clock reads, and the next schedule starts from none.
func (w *world) unstepWall() {
	for _, back := range w.walls {
		back()
	}
	w.walls = nil
}

// startTxn begins a transaction, unless the floor is closing.
func (w *world) startTxn() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.hist.closeAt >= 0 {
		return
	}
	w.live++
	w.hist.ntx++
	go w.txn(w.hist.ntx)
}

// startAcquire begins an acquisition, unless three are under way.
func (w *world) startAcquire() {
	w.mu.Lock()
	running := 0
	for _, a := range w.members {
		if !a.exited {
			running++
		}
	}
	if running >= 3 {
		w.mu.Unlock()
		return
	}
	n := len(w.members)
	ctx, cancel := context.WithCancel(context.Background())
	a := &member{n: n, path: fmt.Sprintf("/l/k%d", n%3), ctx: ctx, cancel: cancel,
		called: -1, returned: -1, forgot: -1, cancelAt: -1}
	a.m = NewMember("", "", func(cause error) { w.lose(a, cause) })
	w.members = append(w.members, a)
	w.live++
	w.mu.Unlock()
	go w.acquire(a)
}

// release releases the oldest hold.
func (w *world) release() {
	w.mu.Lock()
	var a *member
	for _, x := range w.members {
		if x.granted() && len(x.loses) == 0 && x.forgot < 0 {
			a = x
			break
		}
	}
	if a != nil {
		a.forgot, a.gaveUp = w.now(), true
	}
	w.mu.Unlock()
	if a == nil {
		return
	}
	w.logf("release %d", a.n)
	a.m.Forget()
	w.s.Writes().Delete(a.path, a.node, a.owner, nil)
}

// cancelOne ends the ctx of the newest acquisition under way.
func (w *world) cancelOne() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.members) - 1; i >= 0; i-- {
		if a := w.members[i]; !a.exited && a.cancelAt < 0 {
			a.cancelAt = w.now()
			a.cancel()
			return
		}
	}
}

// startClose calls the floor's Close, on a goroutine of its own: the
// driver goes on answering what Close waits for.
func (w *world) startClose() {
	if w.hist.closeAt >= 0 {
		return
	}
	w.logf("close")
	w.mu.Lock()
	w.hist.closeAt = w.now()
	w.live++
	w.mu.Unlock()
	go func() {
		w.s.Close()
		w.exit(nil)
	}()
}

// logLine is one of the floor's Warn lines.
type logLine struct {
	at  time.Duration
	msg string
}

// lineHandler keeps the floor's Warn lines (the outage's and the lapse's).
type lineHandler struct{ w *world }

func (h lineHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h lineHandler) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h lineHandler) WithGroup(string) slog.Handler                { return h }

func (h lineHandler) Handle(_ context.Context, r slog.Record) error {
	w := h.w
	w.mu.Lock()
	w.lines = append(w.lines, logLine{at: w.now(), msg: r.Message})
	w.mu.Unlock()
	return nil
}

// The agenda: the driver's actions by time, then by the order scheduled.
type action struct {
	at  time.Duration
	seq int
	fn  func()
}

type agenda struct {
	h   actions
	seq int
}

type actions []*action

func (a actions) Len() int { return len(a) }
func (a actions) Less(i, j int) bool {
	return a[i].at < a[j].at || a[i].at == a[j].at && a[i].seq < a[j].seq
}
func (a actions) Swap(i, j int) { a[i], a[j] = a[j], a[i] }
func (a *actions) Push(x any)   { *a = append(*a, x.(*action)) }
func (a *actions) Pop() any {
	old := *a
	x := old[len(old)-1]
	*a = old[:len(old)-1]
	return x
}

func (g *agenda) at(t time.Duration, fn func()) {
	g.seq++
	heap.Push(&g.h, &action{at: t, seq: g.seq, fn: fn})
}

func (g *agenda) peek() *action {
	if len(g.h) == 0 {
		return nil
	}
	return g.h[0]
}

func (g *agenda) pop() { heap.Pop(&g.h) }
