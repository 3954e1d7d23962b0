package tier_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/nemesis"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// The nemesis: "loss before grant" under the faults that break other
// ZooKeeper locks (issue 9). Process A (a session of its own) holds the
// lock; process B (another session, on other servers or straight to the
// server) waits for it; a fault strikes A's connection or A's server. Then,
// on the monotonic clock of this one test process:
//
//   - A's held context is cancelled, with a cause wrapping tier.ErrLockLost;
//   - A is told before its node is gone, as an observer on B's side sees it
//     (once the node is gone another process can be granted the lock at any
//     moment, so this is the sharp form of the invariant), and before B's
//     Acquire returns;
//   - B gets the lock within nemBound of the fault, with a greater token;
//   - once everything is released and the sessions closed, no node is left.
//
// The observer's and B's times are taken when their goroutines see the
// event, which is after it happened; A's likewise. A passing implementation
// tells A hundreds of milliseconds ahead (a renewal it could not make within
// a fraction of the session timeout), so these orderings are not a matter
// of scheduling luck.

// The scene's bounds and helpers: see internal/nemesis.
const (
	nemTimeout = nemesis.Timeout
	nemBound   = nemesis.Bound
)

var (
	nemProxy         = nemesis.NewProxy
	beforeNextPing   = nemesis.BeforeNextPing
	followerEnsemble = nemesis.FollowerEnsemble
	mkdirs           = nemesis.Mkdirs
)

// serverChatter is nemesis.Chatter on session s's connection.
func serverChatter(t *testing.T, s *zklock.Session, writer *zk.Conn, n int, every time.Duration) {
	t.Helper()
	nemesis.Chatter(t, s.Conn(), writer, n, every)
}

type nemGrant struct {
	held context.Context
	at   time.Time
	err  error
}

type nemTold struct {
	at    time.Time
	cause error
}

// lossScene is A holding the lock on path while B waits for it, with the
// three moments the verdict compares being watched.
type lossScene struct {
	t       *testing.T
	path    string
	servers []string // for the final orphan check
	a, b    *zklock.Session
	obs     *zklock.Session // on B's side
	la, lb  *tier.Lock
	heldA   context.Context
	tokA    int64
	nodeA   string
	toldA   chan nemTold
	gone    chan time.Time
	granted chan nemGrant
	ctx     context.Context
}

// newLossScene makes A hold path and B queue behind it.
func newLossScene(t *testing.T, path string, servers []string, a, b, obs *zklock.Session) *lossScene {
	t.Helper()
	s := &lossScene{
		t: t, path: path, servers: servers, a: a, b: b, obs: obs,
		toldA: make(chan nemTold, 1), gone: make(chan time.Time, 1), granted: make(chan nemGrant, 1),
		ctx: ctxT(t, 90*time.Second),
	}
	s.la, s.lb = newLock(t, a, path), newLock(t, b, path)
	held, err := s.la.Acquire(s.ctx)
	if err != nil {
		t.Fatalf("A: %v", err)
	}
	s.heldA = held
	if s.tokA, err = s.la.Token(held); err != nil {
		t.Fatal(err)
	}
	kids := s.children()
	if len(kids) != 1 {
		t.Fatalf("A holds, queue %v", kids)
	}
	s.nodeA = path + "/" + kids[0]
	_, _, ch, err := obs.Conn().GetW(s.nodeA)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		select {
		case ev := <-ch:
			if ev.Type == zk.EventNodeDeleted {
				s.gone <- time.Now()
			}
		case <-s.ctx.Done():
		}
	}()
	go func() {
		select {
		case <-held.Done():
			s.toldA <- nemTold{time.Now(), context.Cause(held)}
		case <-s.ctx.Done():
		}
	}()
	go func() {
		h, err := s.lb.Acquire(s.ctx)
		s.granted <- nemGrant{h, time.Now(), err}
	}()
	eventually(t, 10*time.Second, "B queued behind A", func() bool { return len(s.children()) == 2 })
	return s
}

// children lists the queue as the observer sees it after a sync.
func (s *lossScene) children() []string {
	s.t.Helper()
	if _, err := s.obs.Conn().Sync(s.path); err != nil && !errors.Is(err, zk.ErrNoNode) {
		s.t.Fatal(err)
	}
	return children(s.t, s.obs.Conn(), s.path)
}

// verdict waits for B's grant, A's notice and the node's removal (each at
// most nemBound after faultAt) and checks their order.
func (s *lossScene) verdict(faultAt time.Time) {
	t := s.t
	t.Helper()
	deadline := time.NewTimer(time.Until(faultAt.Add(nemBound)))
	defer deadline.Stop()
	var (
		g      nemGrant
		told   nemTold
		goneAt time.Time
	)
	for g.at.IsZero() || told.at.IsZero() || goneAt.IsZero() {
		select {
		case g = <-s.granted:
		case told = <-s.toldA:
		case goneAt = <-s.gone:
		case <-deadline.C:
			goto judge
		}
	}
judge:
	ms := func(at time.Time) string {
		if at.IsZero() {
			return "never"
		}
		return at.Sub(faultAt).Round(time.Millisecond).String()
	}
	t.Logf("fault at 0: A's node gone at %s, B granted at %s, A told at %s (%v)",
		ms(goneAt), ms(g.at), ms(told.at), told.cause)
	switch {
	case told.at.IsZero():
		t.Errorf("A's held context was not cancelled within %v of the fault", nemBound)
	case !errors.Is(told.cause, tier.ErrLockLost):
		t.Errorf("A's hold ended with cause %v, want one wrapping tier.ErrLockLost", told.cause)
	}
	if !goneAt.IsZero() && (told.at.IsZero() || !told.at.Before(goneAt)) {
		t.Errorf("LOSS AFTER GRANTABLE: A's node was gone %s before A was told: from then on another process could be granted the lock",
			lag(goneAt, told.at, faultAt.Add(nemBound)))
	}
	switch {
	case g.at.IsZero():
		t.Errorf("B was not granted the lock within %v of the fault", nemBound)
	case g.err != nil:
		t.Errorf("B's Acquire: %v", g.err)
	default:
		if told.at.IsZero() || !told.at.Before(g.at) {
			t.Errorf("LOSS AFTER GRANT: B was granted the lock %s before A was told", lag(g.at, told.at, faultAt.Add(nemBound)))
		}
		if tok, err := s.lb.Token(g.held); err != nil || tok <= s.tokA {
			t.Errorf("B's token %d (%v), not above A's %d", tok, err, s.tokA)
		}
		if err := s.lb.Release(g.held); err != nil && !errors.Is(err, tier.ErrLockLost) {
			t.Errorf("B's Release: %v", err)
		}
	}
}

// lag says how long before b (or before end, if b never came) a came.
func lag(a, b, end time.Time) string {
	if b.IsZero() {
		return fmt.Sprintf("more than %v", end.Sub(a).Round(time.Millisecond))
	}
	return b.Sub(a).Round(time.Millisecond).String()
}

// finish releases what is left, closes the sessions and checks that the
// path has no node left.
func (s *lossScene) finish() {
	s.t.Helper()
	if err := s.la.Release(s.heldA); err != nil && !errors.Is(err, tier.ErrLockLost) {
		s.t.Errorf("A's Release after the fault: %v", err)
	}
	s.la.Close()
	s.lb.Close()
	s.a.Close()
	s.b.Close()
	assertNoOrphans(s.t, s.servers, s.path)
}

func TestNemesis(t *testing.T) {
	zktest.TracedStep(t)
	if testing.Short() {
		t.Skip("long fault scenarios")
	}
	// A follower cut from the leader and the other follower, with A's
	// client still connected to it: the follower answers A's pings until
	// syncLimit x tick (2s), while the leader expires A's session after its
	// timeout (2s) and B, on the other members, is granted the lock.
	t.Run("partition", func(t *testing.T) {
		zc, f, rest := followerEnsemble(t)
		// A reaches the follower, and only it, through a proxy that only
		// counts: it shows when A pings.
		pxA := nemProxy(t, zc.Addr(f))
		a := connect(t, []string{pxA.Addr()}, zklock.WithSessionTimeout(nemTimeout))
		b := connect(t, rest)
		obs := connect(t, rest)
		s := newLossScene(t, "/nemesis/partition", zc.Addrs(), a, b, obs)
		beforeNextPing(t, pxA, nemTimeout)
		if err := zc.PartitionMember(f); err != nil {
			t.Fatal(err)
		}
		faultAt := time.Now()
		s.verdict(faultAt)
		if err := zc.HealMember(f); err != nil {
			t.Fatal(err)
		}
		s.finish()
	})

	// Asymmetric partition: A's bytes to the server are lost, the server's
	// still reach A (watch events on a busy session keep A's read deadline
	// fresh), so A's client sees nothing wrong until the server, having
	// heard nothing, expires the session.
	t.Run("asymmetric", func(t *testing.T) {
		servers := zktest.Servers(t)
		px := nemProxy(t, servers[0])
		a := connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(nemTimeout))
		b := connect(t, servers)
		obs := connect(t, servers)
		serverChatter(t, a, obs.Conn(), 40, nemTimeout/10)
		s := newLossScene(t, zktest.Path(t), servers, a, b, obs)
		beforeNextPing(t, px, nemTimeout)
		px.BlockUpstream()
		faultAt := time.Now()
		s.verdict(faultAt)
		px.Heal()
		s.finish()
		t.Logf("%d bytes from A thrown away", px.Stats().Discarded)
	})

	// Stalled writes: nothing A writes is read (its send buffer fills and
	// its writes block) while the server's bytes still reach it. A third
	// of the timeout in, A's session writes more than the socket buffers
	// hold, so that go-zookeeper's send loop blocks in write.
	t.Run("stall", func(t *testing.T) {
		servers := zktest.Servers(t)
		px := nemProxy(t, servers[0])
		a := connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(nemTimeout))
		b := connect(t, servers)
		obs := connect(t, servers)
		serverChatter(t, a, obs.Conn(), 40, nemTimeout/10)
		s := newLossScene(t, zktest.Path(t), servers, a, b, obs)
		beforeNextPing(t, px, nemTimeout)
		px.Stall()
		faultAt := time.Now()
		var writers sync.WaitGroup
		big := bytes.Repeat([]byte("w"), 1200<<10)
		blockAt := time.AfterFunc(nemTimeout/3, func() {
			for i := range 5 {
				writers.Add(1)
				go func() {
					defer writers.Done()
					_, _ = a.Conn().Set(fmt.Sprintf("%s-big%d", s.path, i), big, -1)
				}()
			}
		})
		s.verdict(faultAt)
		blockAt.Stop()
		px.Heal()
		s.finish()
		writers.Wait() // the session is closed: the writes have failed
	})

	// A's connection closes (the client notices at once): the simple case
	// every lock gets right, kept as the baseline.
	t.Run("drop", func(t *testing.T) {
		servers := zktest.Servers(t)
		px := nemProxy(t, servers[0])
		a := connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(nemTimeout))
		b := connect(t, servers)
		obs := connect(t, servers)
		s := newLossScene(t, zktest.Path(t), servers, a, b, obs)
		px.DropAll()
		s.verdict(time.Now())
		s.finish()
	})

	t.Run("reset", testNemesisReset)
	t.Run("flood", testNemesisFlood)
}

// deleteSize is the length on the wire of the delete request of node:
// length, xid, opcode, path, version.
func deleteSize(node string) int { return 4 + 4 + 4 + (4 + len(node)) + 4 }

// TCP resets of A's connection between a release and its delete, and
// between a create and its reply. The session survives each (A reconnects
// within its timeout), so nothing but A itself removes A's node: B must
// still get the lock within nemBound, and the path must be empty once both
// released, while the sessions live.
func testNemesisReset(t *testing.T) {
	servers := zktest.Servers(t)
	path := zktest.Path(t)
	px := nemProxy(t, servers[0])
	a := connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(4*time.Second))
	b := connect(t, servers)
	obs := connect(t, servers)
	la, lb := newLock(t, a, path), newLock(t, b, path)
	ctx := ctxT(t, 60*time.Second)
	list := func() []string {
		if _, err := obs.Conn().Sync(path); err != nil && !errors.Is(err, zk.ErrNoNode) {
			t.Fatal(err)
		}
		return children(t, obs.Conn(), path)
	}
	empty := func(what string) {
		t.Helper()
		eventually(t, nemBound, what+": an empty queue while the sessions live", func() bool { return len(list()) == 0 })
	}
	// bWaits starts B's Acquire and waits until it is queued.
	bWaits := func(queued int) <-chan nemGrant {
		ch := make(chan nemGrant, 1)
		go func() {
			h, err := lb.Acquire(ctx)
			ch <- nemGrant{h, time.Now(), err}
		}()
		eventually(t, 10*time.Second, "B queued", func() bool { return len(list()) == queued })
		return ch
	}
	bGets := func(what string, ch <-chan nemGrant, from time.Time) {
		t.Helper()
		select {
		case g := <-ch:
			if g.err != nil {
				t.Fatalf("%s: B's Acquire: %v", what, g.err)
			}
			t.Logf("%s: B granted %v after A's release", what, g.at.Sub(from).Round(time.Millisecond))
			if err := lb.Release(g.held); err != nil {
				t.Errorf("%s: B's Release: %v", what, err)
			}
		case <-time.After(nemBound):
			t.Fatalf("%s: B blocked %v after A's release; queue %v", what, nemBound, list())
		}
	}

	// Between a release and its delete: the reset comes after the whole
	// delete reached the server (its reply is lost), in the middle of it
	// (it never applies), or just before it (its write meets the reset).
	for _, v := range []struct {
		name string
		arm  func(node string)
	}{
		{"release, delete applied, reply lost", func(node string) { px.ResetAfter(deleteSize(node)) }},
		{"release, delete cut in the middle", func(node string) { px.ResetAfter(deleteSize(node) / 2) }},
		// Whether the delete's write meets the reset or goes out on the
		// next connection is a race: three rounds.
		{"reset, then release at once (1)", func(string) { px.Reset() }},
		{"reset, then release at once (2)", func(string) { px.Reset() }},
		{"reset, then release at once (3)", func(string) { px.Reset() }},
	} {
		held, err := la.Acquire(ctx)
		if err != nil {
			t.Fatalf("%s: A: %v", v.name, err)
		}
		kids := list()
		if len(kids) != 1 {
			t.Fatalf("%s: queue %v", v.name, kids)
		}
		ch := bWaits(2)
		v.arm(path + "/" + kids[0])
		released := time.Now()
		if err := la.Release(held); err != nil && !errors.Is(err, tier.ErrLockLost) {
			t.Errorf("%s: A's Release: %v", v.name, err)
		}
		bGets(v.name, ch, released)
		px.DropAfter(0)
		empty(v.name)
	}

	// Between a create and its reply: B holds, A queues with its create
	// applied and the reply lost, or cut in the middle; then B releases.
	for _, v := range []struct {
		name string
		n    int
	}{
		{"create applied, reply lost", createSize(path)},
		{"create cut in the middle", createSize(path) / 2},
	} {
		heldB, err := lb.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		px.ResetAfter(v.n)
		type res struct {
			held context.Context
			err  error
		}
		got := make(chan res, 1)
		go func() {
			h, err := la.Acquire(ctx)
			got <- res{h, err}
		}()
		eventually(t, nemBound, v.name+": the reset", func() bool { return px.Stats().Reset > 0 })
		px.DropAfter(0)
		// A's queue entry, whichever node it is, must be one: no orphan of
		// the lost reply next to it.
		eventually(t, nemBound, v.name+": A queued once", func() bool { return len(list()) == 2 })
		if err := lb.Release(heldB); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-got:
			if r.err != nil {
				t.Fatalf("%s: A's Acquire: %v", v.name, r.err)
			}
			if err := la.Release(r.held); err != nil {
				t.Errorf("%s: A's Release: %v", v.name, err)
			}
		case <-time.After(nemBound):
			t.Fatalf("%s: A blocked %v after B's release; queue %v", v.name, nemBound, list())
		}
		empty(v.name)
	}
	t.Logf("%d connections reset", px.Stats().Reset)
	la.Close()
	lb.Close()
	a.Close()
	b.Close()
	assertNoOrphans(t, servers, path)
}

// A session with hundreds of waiting locks expires: go-zookeeper then sends
// one event per watch at once, into a channel of 6 that drops what does not
// fit, while the application's state listener is busy with the expiry. Every waiter must end (an error, or a grant
// after it queued again in the new session), no node may be left, and the
// session must work afterwards: a new hold is not lost at once.
func testNemesisFlood(t *testing.T) {
	const n = 200
	servers := zktest.Servers(t)
	base := zktest.Path(t)
	px := nemProxy(t, servers[0])
	var expired sync.Once
	expiredCh := make(chan struct{})
	// The application's listener takes its time over the expiry (logging,
	// metrics, a lock of its own): meanwhile the events pile up.
	var alog zktest.SyncBuffer
	a := connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(nemTimeout),
		zklock.WithLogger(slog.New(slog.NewTextHandler(&alog, &slog.HandlerOptions{Level: slog.LevelDebug}))),
		zklock.WithStateListener(func(st zklock.State) {
			if st == zklock.StateExpired {
				expired.Do(func() {
					close(expiredCh)
					time.Sleep(1500 * time.Millisecond)
				})
			}
		}))
	h := connect(t, servers)
	obs := connect(t, servers)
	ctx := ctxT(t, 60*time.Second)
	paths := make([]string, n)
	holds := make([]context.Context, n)
	hl := make([]*tier.Lock, n)
	al := make([]*tier.Lock, n)
	for i := range paths {
		paths[i] = fmt.Sprintf("%s/p%d", base, i)
		hl[i], al[i] = newLock(t, h, paths[i]), newLock(t, a, paths[i])
		held, err := hl[i].Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		holds[i] = held
	}
	type res struct {
		i    int
		held context.Context
		err  error
	}
	results := make(chan res, n)
	for i := range paths {
		go func() {
			held, err := al[i].Acquire(ctx)
			results <- res{i, held, err}
		}()
	}
	queued := func() int {
		q := 0
		for _, p := range paths {
			if len(children(t, obs.Conn(), p)) == 2 {
				q++
			}
		}
		return q
	}
	eventually(t, 20*time.Second, "every waiter queued", func() bool { return queued() == n })
	oldID := a.SessionID()

	// Freeze A past its timeout: the server expires the session and its
	// nodes; A finds out when the traffic flows again.
	px.Pause()
	frozen := time.Now()
	eventually(t, nemBound, "the server to expire A's session", func() bool {
		for _, p := range paths[:5] {
			if len(children(t, obs.Conn(), p)) != 1 {
				return false
			}
		}
		return true
	})
	px.Resume()
	t.Logf("A's session expired on the server %v after the freeze", time.Since(frozen).Round(time.Millisecond))
	select {
	case <-expiredCh:
	case <-time.After(nemBound):
		t.Fatalf("A's session listener never heard of the expiry")
	}

	// The holder lets go; every waiter must end within the bound.
	for i := range hl {
		if err := hl[i].Release(holds[i]); err != nil {
			t.Fatal(err)
		}
	}
	released := time.Now()
	granted, lostAtOnce, failed := 0, 0, map[string]int{}
	returned := make([]bool, n)
	deadline := time.After(nemBound)
	for range n {
		select {
		case r := <-results:
			returned[r.i] = true
			if r.err != nil {
				failed[r.err.Error()]++
				continue
			}
			granted++
			if r.held.Err() != nil {
				lostAtOnce++
			}
			if err := al[r.i].Release(r.held); err != nil && !errors.Is(err, tier.ErrLockLost) {
				t.Errorf("release p%d: %v", r.i, err)
			}
		case <-deadline:
			var stuck []string
			for i, ok := range returned {
				if !ok {
					stuck = append(stuck, paths[i])
				}
			}
			reportStuck(t, stuck, obs, &alog)
			t.Fatalf("%d of %d waiters still blocked %v after the holder released (%d granted, errors %v)",
				n-granted-len(failed), n, nemBound, granted, failed)
		}
	}
	t.Logf("after the expiry: %d waiters granted in the new session, %d failed %v, all within %v",
		granted, n-granted, failed, time.Since(released).Round(time.Millisecond))
	if lostAtOnce > 0 {
		t.Errorf("%d of the %d waiters granted after the expiry got a hold already lost: %v", lostAtOnce, granted, "held context cancelled on return")
	}
	if a.SessionID() == oldID {
		t.Errorf("session id unchanged after the expiry: %x", oldID)
	}

	// The session works: a new hold is held, not lost at once.
	fresh := newLock(t, a, base+"/fresh")
	held, err := fresh.Acquire(ctx)
	if err != nil {
		t.Fatalf("acquire after the flood: %v", err)
	}
	select {
	case <-held.Done():
		t.Errorf("a hold taken after the flood was lost at once: %v", context.Cause(held))
	case <-time.After(500 * time.Millisecond):
	}
	if err := fresh.Release(held); err != nil {
		t.Errorf("release after the flood: %v", err)
	}
	again, err := al[0].Acquire(ctx)
	if err != nil {
		t.Fatalf("re-acquire p0 after the flood: %v", err)
	}
	if again.Err() != nil {
		t.Errorf("p0 re-acquired after the flood, lost at once: %v", context.Cause(again))
	}
	if err := al[0].Release(again); err != nil {
		t.Errorf("release p0: %v", err)
	}
	eventually(t, nemBound, "empty queues while the sessions live", func() bool {
		for _, p := range paths {
			if len(children(t, obs.Conn(), p)) != 0 {
				return false
			}
		}
		return true
	})
	for i := range paths {
		al[i].Close()
		hl[i].Close()
	}
	fresh.Close()
	a.Close()
	h.Close()
	check := connect(t, servers)
	for _, p := range append(paths, base+"/fresh") {
		if left := children(t, check.Conn(), p); len(left) > 0 {
			t.Errorf("orphan nodes under %s after every session closed: %v", p, left)
		}
	}
}
