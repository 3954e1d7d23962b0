package tier_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/child"
	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/linear"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// Fault scenarios: several sessions ("processes"), each with one tier.Lock
// and a few goroutines, hammer one lock path while a fault hits them. After
// each scenario:
//   - safety: the exclusion checker saw no overlap and fencing tokens that
//     only increase from one hold to the next;
//   - liveness: every surviving worker completes a hold again within
//     livenessBound of the fault ending (a generous bound that catches a
//     stuck worker, not a speed claim);
//   - hygiene: once the workers stop the queue empties, and once every
//     session is closed a fresh connection finds no node left under the
//     lock path (the container itself may already be gone);
//   - goleak (TestMain) finds nothing left running.

const (
	faultSessionTimeout = 4 * time.Second // what connect asks for
	livenessBound       = faultSessionTimeout + 5*time.Second
	workHold            = 2 * time.Millisecond
)

// The checker is internal/exclusion's Log: holders log entering and
// leaving the critical section, with their fencing token, in the order of
// the calls. Holders are named by session (Proc) and goroutine (G).

// who names a holder in messages: session s, goroutine g.
func who(h exclusion.Hold) string { return fmt.Sprintf("s%d/g%d", h.Proc, h.G) }

// verifyExclusion fails the test on any violation the checker finds in
// log: an overlap, or a fencing token not above the previous hold's.
func verifyExclusion(t *testing.T, log *exclusion.Log) {
	t.Helper()
	res := log.Check(exclusion.Options{Tokens: true})
	for i, v := range res.Examples {
		if i == 10 {
			t.Errorf("... and %d more violations", res.Violations()-i)
			break
		}
		prev := ""
		if v.Prev != nil {
			prev = " after " + who(*v.Prev)
		}
		t.Errorf("exclusion violated: %s: %s (token %d)%s: %s", v.Kind, who(v.Hold), v.Hold.Token, prev, v.Detail)
	}
	var last int64
	for _, h := range log.Holds() {
		last = max(last, h.Token)
	}
	t.Logf("%d holds checked, %d violations, last token %d", res.Holds, res.Violations(), last)
	if p := linear.Check(linear.History{Holds: log.Holds()}, linear.Options{Tokens: true}); !p.OK() {
		t.Error(p)
	}
}

// worker is one goroutine of a process: acquire, work briefly under the
// lock (leaving at once if the held context ends), release, again.
type worker struct {
	name      string
	session   int
	g         int
	l         *tier.Lock
	holds     atomic.Int64
	lastEnter atomic.Int64 // UnixNano of the last hold's acquisition
	lost      atomic.Int64 // releases that reported the hold lost
	errMu     sync.Mutex
	errs      map[string]int // unexpected errors by message
}

func (w *worker) fail(err error) {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	if w.errs == nil {
		w.errs = map[string]int{}
	}
	w.errs[err.Error()]++
}

// crew runs the workers of several sessions on one path.
type crew struct {
	t        *testing.T
	path     string
	log      *exclusion.Log
	sessions []*zklock.Session
	locks    []*tier.Lock
	workers  []*worker
	through  atomic.Pointer[holdThrough]
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// holdThrough makes one hold last until the fault ends it: the worker that
// takes it says so on holding, then keeps the hold until its held context
// is cancelled, and reports when on ended.
type holdThrough struct {
	session int // whose worker takes it; -1: any
	taken   atomic.Bool
	holding chan struct{}
	ended   chan lostHold
}

type lostHold struct {
	who     string
	session int
	tok     int64
	at      int64 // when the worker saw its held context end (exclusion.Now)
	cause   error // context.Cause of the held context
}

// holdThroughFault arms the next hold of a worker of session (-1: any) to
// last until the fault ends it, and waits until a worker holds it.
func (c *crew) holdThroughFault(session int) *holdThrough {
	c.t.Helper()
	h := &holdThrough{session: session, holding: make(chan struct{}), ended: make(chan lostHold, 1)}
	c.through.Store(h)
	select {
	case <-h.holding:
	case <-time.After(livenessBound):
		c.t.Fatal("no worker took the lock to hold it through the fault")
	}
	return h
}

// take reports whether w's current hold is the one to keep through the
// fault.
func (h *holdThrough) take(w *worker) bool {
	return h != nil && (h.session < 0 || h.session == w.session) && h.taken.CompareAndSwap(false, true)
}

// wait keeps the hold until the held context ends (or the crew stops).
func (h *holdThrough) wait(ctx context.Context, w *worker, held context.Context, tok int64) {
	close(h.holding)
	r := lostHold{who: w.name, session: w.session, tok: tok}
	t := time.NewTimer(4 * livenessBound)
	defer t.Stop()
	select {
	case <-held.Done():
		r.at, r.cause = exclusion.Now(), context.Cause(held)
	case <-t.C:
	case <-ctx.Done():
	}
	h.ended <- r
}

// lost waits for the hold kept through the fault to end and checks that
// it ended as a loss with the given cause, before any other session
// acquired the lock (after faultAt), and that the next holder's token is
// greater.
func (c *crew) lost(h *holdThrough, faultAt time.Time, causes ...error) lostHold {
	c.t.Helper()
	var r lostHold
	select {
	case r = <-h.ended:
	case <-time.After(livenessBound):
		c.t.Fatalf("the hold kept through the fault did not end within %v", livenessBound)
	}
	if r.at == 0 {
		c.t.Fatalf("%s's held context was never cancelled", r.who)
	}
	if !errors.Is(r.cause, tier.ErrLockLost) || !slices.ContainsFunc(causes, func(c error) bool { return errors.Is(r.cause, c) }) {
		c.t.Errorf("%s's hold ended with cause %v, want ErrLockLost (one of %v)", r.who, r.cause, causes)
	}
	from := exclusion.Now() - int64(time.Since(faultAt)) // faultAt on the checker's clock
	var next exclusion.Hold
	eventually(c.t, livenessBound, "another session acquiring after the fault", func() bool {
		var ok bool
		next, ok = c.log.First(func(h exclusion.Hold) bool { return h.Proc != int32(r.session) && h.Enter > from })
		return ok
	})
	ms := func(t int64) time.Duration { return time.Duration(t - from).Round(time.Millisecond) }
	c.t.Logf("fault at 0: %s told at %v; %s acquired at %v", r.who, ms(r.at), who(next), ms(next.Enter))
	if r.at >= next.Enter {
		c.t.Errorf("%s's held context was cancelled at %v, after %s acquired at %v", r.who, ms(r.at), who(next), ms(next.Enter))
	}
	if next.Token <= r.tok {
		c.t.Errorf("next holder %s has token %d, not above the lost hold's %d", who(next), next.Token, r.tok)
	}
	return r
}

func newCrew(t *testing.T, path string, sessions []*zklock.Session, perSession int) *crew {
	c := &crew{t: t, path: path, log: &exclusion.Log{}, sessions: sessions}
	for i, s := range sessions {
		l := newLock(t, s, path)
		c.locks = append(c.locks, l)
		for g := 0; g < perSession; g++ {
			c.workers = append(c.workers, &worker{name: fmt.Sprintf("s%d/g%d", i, g), session: i, g: g, l: l})
		}
	}
	return c
}

func (c *crew) start() {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	for _, w := range c.workers {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.run(ctx, w)
		}()
	}
}

func (c *crew) run(ctx context.Context, w *worker) {
	for ctx.Err() == nil {
		held, err := w.l.Acquire(ctx)
		if err != nil {
			if ctx.Err() == nil {
				w.fail(err)
				time.Sleep(10 * time.Millisecond)
			}
			continue
		}
		at := time.Now()
		tok, terr := w.l.Token(held)
		// A hold lost before the work starts is not entered.
		if terr == nil && held.Err() == nil {
			e := c.log.Enter(int32(w.session), int32(w.g), 0, tok)
			w.lastEnter.Store(at.UnixNano())
			if h := c.through.Load(); h.take(w) {
				h.wait(ctx, w, held, tok)
			} else {
				t := time.NewTimer(workHold)
				select {
				case <-t.C:
				case <-held.Done():
					t.Stop()
				}
			}
			e.Exit()
			w.holds.Add(1)
		}
		if err := w.l.Release(held); errors.Is(err, tier.ErrLockLost) {
			w.lost.Add(1)
		} else if err != nil {
			w.fail(err)
		}
	}
}

// progressSince waits until every worker has acquired the lock after
// since, failing after bound.
func (c *crew) progressSince(since time.Time, bound time.Duration, what string) {
	c.t.Helper()
	deadline := since.Add(bound)
	for {
		var stuck []string
		for _, w := range c.workers {
			if w.lastEnter.Load() <= since.UnixNano() {
				stuck = append(stuck, w.name)
			}
		}
		if len(stuck) == 0 {
			c.t.Logf("%s: every worker acquired again within %v", what, time.Since(since).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: workers %v made no progress within %v", what, stuck, bound)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends the workers, checks exclusion and reports what they saw.
func (c *crew) stop() {
	c.t.Helper()
	if c.cancel == nil {
		return
	}
	c.cancel()
	c.cancel = nil
	zktest.Wait(c.t, "the crew's workers", &c.wg)
	verifyExclusion(c.t, c.log)
	var holds, lost int64
	for _, w := range c.workers {
		holds += w.holds.Load()
		lost += w.lost.Load()
		w.errMu.Lock()
		if len(w.errs) > 0 {
			c.t.Logf("%s: %d holds, %d lost, errors during faults: %v", w.name, w.holds.Load(), w.lost.Load(), w.errs)
		}
		w.errMu.Unlock()
	}
	c.t.Logf("%d workers: %d holds, %d of them lost to a fault", len(c.workers), holds, lost)
}

// finish stops the workers and checks that no node is left: first while
// the sessions live (every release and every lost hold's node must be
// deleted by the sessions themselves), then with all sessions closed, from
// a fresh connection.
func (c *crew) finish(servers []string) {
	c.t.Helper()
	c.stop()
	obs := connect(c.t, servers)
	eventually(c.t, livenessBound, "an empty queue once the workers stopped", func() bool {
		return len(children(c.t, obs.Conn(), c.path)) == 0
	})
	for _, l := range c.locks {
		l.Close()
	}
	for _, s := range c.sessions {
		s.Close()
	}
	obs.Close()
	assertNoOrphans(c.t, servers, c.path)
}

// assertNoOrphans lists path from a new connection: no children, or no
// path at all (an empty container is reaped by the server).
func assertNoOrphans(t *testing.T, servers []string, path string) {
	t.Helper()
	s := connect(t, servers)
	defer s.Close()
	if left := children(t, s.Conn(), path); len(left) > 0 {
		t.Fatalf("orphan nodes under %s after every session closed: %v", path, left)
	}
}

// connectN opens n sessions, the i-th on servers(i), each logging at Debug
// to a buffer of the test's that is printed only if the test fails: a fault
// scene that goes wrong on a loaded machine says what each session saw.
func connectN(t *testing.T, n int, servers func(i int) []string, opts ...zklock.SessionOption) []*zklock.Session {
	out := make([]*zklock.Session, n)
	logs := make([]*zktest.SyncBuffer, n)
	for i := range out {
		logs[i] = &zktest.SyncBuffer{}
		h := slog.NewTextHandler(logs[i], &slog.HandlerOptions{Level: slog.LevelDebug})
		log := zklock.WithLogger(slog.New(h).With("session", i))
		out[i] = connect(t, servers(i), append([]zklock.SessionOption{log}, opts...)...)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for i, b := range logs {
			t.Logf("session %d's log (its last %d lines):\n%s", i, lastLines, tail(b.String(), lastLines))
		}
	})
	return out
}

// lastLines is how much of each session's log a failed fault scene prints.
const lastLines = 150

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// SIGKILL of a standalone server, then a restart on the same data: the
// sessions survive (or expire and start anew) and the work goes on.
func TestFaultRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private ZooKeeper")
	}
	zc := zktest.Ensemble(t, 1)
	servers := zc.Addrs()
	path := "/faults/restart"
	c := newCrew(t, path, connectN(t, 3, func(int) []string { return servers }), 3)
	c.start()
	defer c.stop()
	c.progressSince(time.Now(), livenessBound, "warm-up")

	h := c.holdThroughFault(-1)
	killed := time.Now()
	if err := zc.Kill(0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := zc.Restart(ctxT(t, 60*time.Second), 0); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	c.lost(h, killed, zklock.ErrDisconnected, zklock.ErrLeaseExpired)
	c.progressSince(restarted, livenessBound, "after the restart")
	c.finish(servers)
}

// SIGKILL of the leader of a three-member ensemble: a new leader is
// elected, every session reconnects (followers drop their clients too
// while the quorum re-forms) and the work goes on; then the old leader
// rejoins as a follower.
func TestFaultLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private ensemble")
	}
	zc := zktest.Ensemble(t, 3)
	servers := zc.Addrs()
	path := "/faults/leader"
	// Every session gets every member; go-zookeeper picks one at random,
	// so the sessions spread over the ensemble.
	c := newCrew(t, path, connectN(t, 3, func(int) []string { return servers }), 3)
	c.start()
	defer c.stop()
	c.progressSince(time.Now(), livenessBound, "warm-up")

	leader, err := zc.Leader(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range c.sessions {
		t.Logf("session %d on %s (leader: %s)", i, s.Conn().Server(), servers[leader])
	}
	h := c.holdThroughFault(-1)
	killed := time.Now()
	if err := zc.Kill(leader); err != nil {
		t.Fatal(err)
	}
	c.lost(h, killed, zklock.ErrDisconnected, zklock.ErrLeaseExpired)
	c.progressSince(killed, livenessBound, fmt.Sprintf("after killing leader %d", leader))
	eventually(t, livenessBound, "a new leader", func() bool {
		l, err := zc.Leader(context.Background())
		return err == nil && l != leader
	})

	if err := zc.Restart(ctxT(t, 60*time.Second), leader); err != nil {
		t.Fatal(err)
	}
	c.progressSince(time.Now(), livenessBound, "after the old leader rejoined")
	c.finish(servers)
}

// A holder's traffic stops (a paused network, or a process frozen by the
// OS) until the server expires its session. Under the default policy its
// held context is cancelled before another session can acquire the lock,
// the next holder's token is greater, and once the traffic flows again the
// session learns of the expiry, starts a new one, and its workers go on.
func TestFaultExpire(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a fault scene, about 4 s")
	}
	servers := zktest.Servers(t)
	px, err := faultproxy.New(servers[0])
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	var expired atomic.Bool
	const timeout = 2 * time.Second // tickTime 200ms: the server grants it
	paused := connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(timeout),
		zklock.WithStateListener(func(st zklock.State) {
			if st == zklock.StateExpired {
				expired.Store(true)
			}
		}))
	direct := connect(t, servers)
	path := zktest.Path(t)
	c := newCrew(t, path, []*zklock.Session{paused, direct}, 2)
	c.start()
	defer c.stop()
	c.progressSince(time.Now(), livenessBound, "warm-up")
	oldID := paused.SessionID()

	h := c.holdThroughFault(0)
	px.Pause()
	pausedAt := time.Now()
	// c.lost waits, with the traffic still stopped, until another session
	// holds the lock: it can only get there once the server has expired
	// the paused session.
	func() {
		defer px.Resume()
		c.lost(h, pausedAt, zklock.ErrDisconnected, zklock.ErrLeaseExpired)
	}()
	resumed := time.Now()
	c.progressSince(resumed, livenessBound, "after the traffic resumed")
	if !expired.Load() || paused.SessionID() == oldID {
		t.Errorf("session not expired and renewed: expired event %v, id %x -> %x", expired.Load(), oldID, paused.SessionID())
	}
	c.finish(servers)
}

// createSize is the length on the wire of the create request that a tier
// lock made by New on this process sends first: the request header, the
// node name (path + "/_c_<36-char uuid>-lock-"), the node data, the
// world:anyone ACL and the flags.
func createSize(path string) int {
	host, _ := os.Hostname()
	data, _ := json.Marshal(map[string]any{"host": host, "pid": os.Getpid()})
	name := path + "/_c_" + strings.Repeat("0", 36) + "-lock-"
	acl := 4 + 4 + (4 + len("world")) + (4 + len("anyone"))
	return 4 + 4 + 4 + (4 + len(name)) + (4 + len(data)) + acl + 4
}

// Connections dropped at random while the sessions work, some of them cut
// between a create and its reply: every lost hold is noticed (no overlap),
// no node is orphaned, and the work resumes.
func TestFaultDrop(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a fault scene, about 7 s")
	}
	servers := zktest.Servers(t)
	path := zktest.Path(t)
	const n = 3
	proxies := make([]*faultproxy.Proxy, n+1)
	for i := range proxies {
		px, err := faultproxy.New(servers[0])
		if err != nil {
			t.Fatal(err)
		}
		defer px.Close()
		proxies[i] = px
	}
	ss := connectN(t, n+1, func(i int) []string { return []string{proxies[i].Addr()} })
	// Sessions 0..n-1 hammer; session n (its lock made here, with no
	// worker goroutines) queues now and then with its create cut off.
	c := newCrew(t, path, ss[:n], 3)
	cutLock := newLock(t, ss[n], path)
	c.sessions = ss
	c.locks = append(c.locks, cutLock)
	c.start()
	defer c.stop()
	c.progressSince(time.Now(), livenessBound, "warm-up")

	// First a drop under a holder, then drops at random.
	h := c.holdThroughFault(0)
	droppedAt := time.Now()
	proxies[0].DropAll()
	c.lost(h, droppedAt, zklock.ErrDisconnected, zklock.ErrLeaseExpired)

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 6))
	ctx := ctxT(t, 60*time.Second)
	cutDone := make(chan error, 1)
	go func() {
		cutDone <- func() error {
			for round := 0; round < 3; round++ {
				for ss[n].State() != zklock.StateConnected {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					time.Sleep(10 * time.Millisecond)
				}
				time.Sleep(50 * time.Millisecond)
				proxies[n].DropAfter(createSize(path))
				held, err := cutLock.Acquire(ctx)
				if err != nil {
					return fmt.Errorf("acquire after a cut create: %w", err)
				}
				tok, err := cutLock.Token(held)
				if err == nil && held.Err() == nil {
					c.log.Enter(n, 0, 0, tok).Exit() // session n, the cut one
				}
				if err := cutLock.Release(held); err != nil && !errors.Is(err, tier.ErrLockLost) {
					return err
				}
			}
			return nil
		}()
	}()

	end := time.Now().Add(3 * time.Second)
	for time.Now().Before(end) {
		time.Sleep(time.Duration(200+rng.IntN(300)) * time.Millisecond)
		px := proxies[rng.IntN(n)]
		if rng.IntN(3) == 0 {
			px.DropAfter(1 + rng.IntN(2*createSize(path)))
		} else {
			px.DropAll()
		}
	}
	for _, px := range proxies[:n] {
		px.DropAfter(0)
	}
	healed := time.Now()
	select {
	case err := <-cutDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(livenessBound + 10*time.Second):
		t.Fatal("the session with cut creates never acquired")
	}
	proxies[n].DropAfter(0)
	c.progressSince(healed, livenessBound, "after the drops")
	dropped := int64(0)
	for _, px := range proxies {
		dropped += px.Stats().Dropped
	}
	t.Logf("%d connections dropped (%d by cut creates)", dropped, proxies[n].Stats().Dropped)
	if proxies[n].Stats().Dropped == 0 {
		t.Error("no create was cut")
	}
	c.finish(servers)
}

// killRole is the role (internal/child) of the process TestFaultKill
// kills; killTask is what it does.
const killRole = "tier-kill-child"

type killTask struct {
	Servers        []string
	Path           string
	SessionTimeout time.Duration
}

// exitIfKillChild runs killChildMain and exits when the test binary was
// started as TestFaultKill's child (TestMain calls it first).
func exitIfKillChild() {
	child.Dispatch(map[string]func() int{killRole: killChildMain, closeStormRole: closeStormMain, stallRole: stallChildMain})
}

// killChildMain acquires the lock, prints "held <token>" and waits to be
// killed.
func killChildMain() int {
	var task killTask
	if err := child.Task(&task); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := zklock.Connect(ctx, task.Servers, zklock.WithLogger(quietLog), zklock.WithSessionTimeout(task.SessionTimeout))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	l, err := tier.New(s, task.Path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	held, err := l.Acquire(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tok, _ := l.Token(held)
	fmt.Printf("held %d\n", tok)
	time.Sleep(time.Minute) // killed long before
	return 3
}

// A process holding the lock is killed with SIGKILL: nothing of it runs to
// release anything. Its session expires after its timeout, its node goes
// with it, and the session waiting next acquires within that timeout plus
// a small bound, with a greater token.
func TestFaultKill(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: kills a child process holding a lock, about 2 s")
	}
	servers := zktest.Servers(t)
	path := zktest.Path(t)
	const childTimeout = 2 * time.Second
	const slack = 3 * time.Second

	proc, err := child.Start(child.Spec{
		Role: killRole, Args: []string{"-test.run=^$"}, Stderr: os.Stderr,
		Task: killTask{Servers: servers, Path: path, SessionTimeout: childTimeout},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { proc.Kill(); _ = proc.Wait() }()
	var childTok int64
	select {
	case line := <-proc.Lines():
		tok, ok := strings.CutPrefix(strings.TrimSpace(string(line)), "held ")
		if childTok, err = strconv.ParseInt(tok, 10, 64); !ok || err != nil {
			t.Fatalf("child said %q (%s)", line, proc.Describe("child"))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("child never held the lock")
	}
	x := &exclusion.Log{}
	childHold := x.Enter(1, 0, 0, childTok) // proc 1: the child; 0: this process

	// The child's node: the one whose data carries its pid.
	s := connect(t, servers)
	var childNode string
	for _, name := range children(t, s.Conn(), path) {
		data, _, err := s.Conn().Get(path + "/" + name)
		var d struct{ Pid int }
		if err == nil && json.Unmarshal(data, &d) == nil && d.Pid == proc.Pid() {
			childNode = path + "/" + name
		}
	}
	if childNode == "" {
		t.Fatalf("no node of pid %d under %s", proc.Pid(), path)
	}

	l := newLock(t, s, path)
	type result struct {
		held context.Context
		at   time.Time
		err  error
	}
	got := make(chan result, 1)
	ctx := ctxT(t, 30*time.Second)
	go func() {
		held, err := l.Acquire(ctx)
		got <- result{held, time.Now(), err}
	}()
	eventually(t, 10*time.Second, "the waiter queued", func() bool { return len(children(t, s.Conn(), path)) == 2 })
	select {
	case r := <-got:
		t.Fatalf("the waiter acquired while the child held the lock: %v", r.err)
	default:
	}

	killed := time.Now()
	proc.Kill()
	werr := proc.Wait()
	var ee *exec.ExitError
	if !errors.As(werr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die of SIGKILL: %v", werr)
	}
	childHold.Exit() // a dead process does nothing under the lock

	var r result
	select {
	case r = <-got:
	case <-time.After(childTimeout + slack):
		t.Fatalf("the waiter did not acquire within %v of the kill", childTimeout+slack)
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Logf("waiter acquired %v after the kill (child's session timeout %v)", r.at.Sub(killed).Round(time.Millisecond), childTimeout)
	tok, err := l.Token(r.held)
	if err != nil {
		t.Fatal(err)
	}
	waiterHold := x.Enter(0, 0, 0, tok)
	if ok, _, err := s.Conn().Exists(childNode); err != nil || ok {
		t.Errorf("dead process's node %s: exists %v (%v)", childNode, ok, err)
	}
	waiterHold.Exit()
	if err := l.Release(r.held); err != nil {
		t.Fatal(err)
	}
	verifyExclusion(t, x)
	eventually(t, livenessBound, "an empty queue", func() bool { return len(children(t, s.Conn(), path)) == 0 })
	l.Close()
	s.Close()
	assertNoOrphans(t, servers, path)
}
