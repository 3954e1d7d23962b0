package tier_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

func TestReentrancyDepth(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	p := zktest.Path(t)
	l := newLock(t, s, p)
	ctx := ctxT(t, 10*time.Second)
	held, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node := children(t, s.Conn(), p)
	tok, _ := l.Token(held)
	const depth = 1000
	for i := 1; i < depth; i++ {
		h2, err := l.Acquire(held)
		if err != nil || h2 != held {
			t.Fatalf("re-entry %d: %v", i, err)
		}
	}
	if n := l.HoldCount(held); n != depth {
		t.Fatalf("HoldCount = %d, want %d", n, depth)
	}
	if got := children(t, s.Conn(), p); len(got) != 1 || got[0] != node[0] {
		t.Fatalf("re-entry changed the nodes: %v -> %v", node, got)
	}
	// Inner releases never touch the node (the Java design's fault).
	for i := depth; i > 1; i-- {
		if err := l.Release(held); err != nil {
			t.Fatalf("release at depth %d: %v", i, err)
		}
		if held.Err() != nil {
			t.Fatalf("held context ended at depth %d", i)
		}
	}
	if got := children(t, s.Conn(), p); len(got) != 1 || got[0] != node[0] {
		t.Fatalf("inner releases changed the nodes: %v", got)
	}
	if tk, _ := l.Token(held); tk != tok {
		t.Fatalf("token changed under re-entry: %d -> %d", tok, tk)
	}
	if err := l.Release(held); err != nil {
		t.Fatal(err)
	}
	if held.Err() == nil {
		t.Fatal("held context not cancelled by the last release")
	}
	if err := l.Release(held); !errors.Is(err, tier.ErrNotHolder) {
		t.Fatalf("unbalanced release: %v, want ErrNotHolder", err)
	}
	if l.HoldCount(held) != 0 {
		t.Fatal("count below zero")
	}
	// A foreign context, and another lock's hold, release nothing.
	other := newLock(t, s, zktest.Path(t))
	oh, err := other.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(oh); !errors.Is(err, tier.ErrNotHolder) {
		t.Fatalf("release with another lock's hold: %v", err)
	}
	if err := l.Release(context.Background()); !errors.Is(err, tier.ErrNotHolder) {
		t.Fatalf("release with a bare context: %v", err)
	}
	if l.HoldCount(h) != 1 || other.HoldCount(oh) != 1 {
		t.Fatal("foreign releases changed counts")
	}
	if err := l.Release(h); err != nil {
		t.Fatal(err)
	}
	if err := other.Release(oh); err != nil {
		t.Fatal(err)
	}
}

// Goroutines of one process are serialized by the gate: never two inside,
// and only one znode whatever their number.
func TestGoroutinesOneNode(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	p := zktest.Path(t)
	l := newLock(t, s, p)
	ctx := ctxT(t, 60*time.Second)
	var inside, peakNodes atomic.Int32
	var wg sync.WaitGroup
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if n := int32(len(children(t, s.Conn(), p))); n > peakNodes.Load() {
				peakNodes.Store(n)
			}
		}
	}()
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				held, err := l.Acquire(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if inside.Add(1) != 1 {
					t.Error("two goroutines inside")
				}
				inside.Add(-1)
				if err := l.Release(held); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	zktest.Wait(t, "the goroutines", &wg)
	close(stop)
	<-sampled
	if peakNodes.Load() > 1 {
		t.Fatalf("peak of %d znodes for one process", peakNodes.Load())
	}
}

func TestCancelInGateAndInZooKeeper(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	s := connect(t, servers)
	l := newLock(t, s, p)
	ctx := ctxT(t, 20*time.Second)
	held, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// In the gate: another goroutine of this process gives up.
	c1, cancel1 := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel1()
	if _, err := l.Acquire(c1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("gate wait: %v", err)
	}
	if err := l.Release(held); err != nil {
		t.Fatal(err)
	}

	// In ZooKeeper: another process holds it.
	remote := newLock(t, connect(t, servers), p)
	rh, err := remote.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c2, cancel2 := context.WithCancel(ctx)
	go func() { time.Sleep(150 * time.Millisecond); cancel2() }()
	if _, err := l.Acquire(c2); !errors.Is(err, context.Canceled) {
		t.Fatalf("ZooKeeper wait: %v", err)
	}
	// The gate was given back and no node of ours is left.
	eventually(t, 5*time.Second, "our node gone", func() bool { return len(children(t, s.Conn(), p)) == 1 })
	if _, ok, err := l.TryAcquire(ctx); ok || err != nil {
		t.Fatalf("TryAcquire while remote holds = %v, %v", ok, err)
	}
	eventually(t, 5*time.Second, "try's node gone", func() bool { return len(children(t, s.Conn(), p)) == 1 })
	if err := remote.Release(rh); err != nil {
		t.Fatal(err)
	}
	// Nothing was poisoned: the gate is free and the lock works.
	// The remote Release does not wait for the server to apply its delete:
	// the lock shows free a moment later.
	var h context.Context
	eventually(t, 5*time.Second, "TryAcquire on a free lock", func() bool {
		var ok bool
		h, ok, err = l.TryAcquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	})
	if err := l.Release(h); err != nil {
		t.Fatal(err)
	}
}

func TestTryAcquireGateBusy(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	p := zktest.Path(t)
	l := newLock(t, s, p)
	ctx := ctxT(t, 10*time.Second)
	held, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := l.TryAcquire(ctx); ok || err != nil {
		t.Fatalf("TryAcquire with the gate taken = %v, %v", ok, err)
	}
	if h2, ok, err := l.TryAcquire(held); !ok || err != nil || h2 != held || l.HoldCount(held) != 2 {
		t.Fatalf("reentrant TryAcquire = %v, %v", ok, err)
	}
	l.Release(held)
	l.Release(held)
	if got := children(t, s.Conn(), p); len(got) > 1 {
		t.Fatalf("nodes left: %v", got)
	}
}

// Session expiry cancels every held context; the lock works again once the
// client has a new session.
func TestExpiryCancelsHeldContext(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waits out a session expiry, about 3 s")
	}
	servers := zktest.Servers(t)
	px, err := faultproxy.New(servers[0])
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	s := connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(2*time.Second))
	l := newLock(t, s, zktest.Path(t))
	ctx := ctxT(t, 30*time.Second)
	held, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	inner, _ := l.Acquire(held)
	px.Pause()
	select {
	case <-inner.Done():
	case <-ctx.Done():
		t.Fatal("held context not cancelled")
	}
	if cause := context.Cause(held); !errors.Is(cause, tier.ErrLockLost) {
		t.Fatalf("cause = %v, want ErrLockLost", cause)
	}
	if _, err := l.Acquire(held); !errors.Is(err, tier.ErrLockLost) {
		t.Fatalf("re-entering a lost hold: %v", err)
	}
	px.Resume()
	if err := l.Release(held); err != nil {
		t.Fatalf("inner release of a lost hold: %v", err)
	}
	if err := l.Release(held); !errors.Is(err, tier.ErrLockLost) {
		t.Fatalf("last release of a lost hold: %v, want ErrLockLost", err)
	}
	eventually(t, 20*time.Second, "new session", func() bool { return s.State() == zklock.StateConnected })
	h2, err := l.Acquire(ctx)
	if err != nil {
		t.Fatalf("acquire after expiry: %v", err)
	}
	if h2.Err() != nil {
		t.Fatal("new hold already cancelled")
	}
	if err := l.Release(h2); err != nil {
		t.Fatal(err)
	}
}

// Releasing the node before the gate: when two processes contend, the other
// process gets the lock between two local holders.
func TestReleaseOrderLetsOthersIn(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	a := newLock(t, connect(t, servers), p)
	b := newLock(t, connect(t, servers), p)
	ctx := ctxT(t, 30*time.Second)
	var mu sync.Mutex
	var seq []string
	run := func(name string, l *tier.Lock, n int, wg *sync.WaitGroup) {
		defer wg.Done()
		for i := 0; i < n; i++ {
			held, err := l.Acquire(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			seq = append(seq, name)
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
			if err := l.Release(held); err != nil {
				t.Error(err)
			}
		}
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(2)
		go run("a", a, 5, &wg)
		go run("b", b, 5, &wg)
	}
	zktest.Wait(t, "the runs", &wg)
	// With both processes always waiting, strict order alternates: count
	// the switches between processes.
	switches := 0
	for i := 1; i < len(seq); i++ {
		if seq[i] != seq[i-1] {
			switches++
		}
	}
	if switches < len(seq)/2 {
		t.Fatalf("only %d switches in %d holds: a process kept the lock: %v", switches, len(seq), seq)
	}
}

// With hand-off on, local waiters take the hold without a new node, within
// the bound; the token stays the same across hand-offs.
func TestHandoffBounded(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	p := zktest.Path(t)
	var handoffs, zkTier atomic.Int32
	l := newLock(t, s, p, tier.WithHandoff(4, time.Minute), tier.WithObserver(func(ev tier.Event) {
		if ev.Kind == tier.Acquired {
			if ev.Tier == tier.TierHandoff {
				handoffs.Add(1)
			} else {
				zkTier.Add(1)
			}
		}
	}))
	ctx := ctxT(t, 30*time.Second)
	first, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := l.Token(first)
	var wg sync.WaitGroup
	var tokMu sync.Mutex
	tokens := map[int64]int{}
	for g := 0; g < 10; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			held, err := l.Acquire(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			tk, _ := l.Token(held)
			tokMu.Lock()
			tokens[tk]++
			tokMu.Unlock()
			time.Sleep(time.Millisecond)
			l.Release(held)
		}()
	}
	// Let the ten goroutines reach the gate (there is no public count of
	// gate waiters; the bound below needs at least four of them queued).
	time.Sleep(100 * time.Millisecond)
	l.Release(first)
	zktest.Wait(t, "the waiters", &wg)
	// 11 holds: at most 4 hand-offs per node, so at least 3 nodes.
	if handoffs.Load() == 0 || zkTier.Load() < 3 || handoffs.Load()+zkTier.Load() != 11 {
		t.Fatalf("handoffs %d, zookeeper acquisitions %d", handoffs.Load(), zkTier.Load())
	}
	if tokens[tok] != 4 {
		t.Fatalf("holds on the first node's token: %d, want 4 (the bound): %v", tokens[tok], tokens)
	}
}

func TestBadInput(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	if _, err := tier.New(s, "relative"); !errors.Is(err, tier.ErrInvalidPath) {
		t.Errorf("relative path: %v", err)
	}
	if _, err := tier.New(nil, "/x"); !errors.Is(err, zklock.ErrNilSession) {
		t.Errorf("nil session: %v", err)
	}
	for _, o := range []tier.Option{tier.WithHandoff(-1, time.Second), tier.WithHandoff(3, 0)} {
		if _, err := tier.New(s, "/x", o); !errors.Is(err, tier.ErrInvalidOption) {
			t.Errorf("bad hand-off bounds: %v", err)
		}
	}
	var nl *tier.Lock
	if _, err := nl.Acquire(context.Background()); !errors.Is(err, tier.ErrNil) {
		t.Errorf("nil lock: %v", err)
	}
	l := newLock(t, s, zktest.Path(t))
	//nolint:staticcheck // the nil context is the bad input under test
	if _, err := l.Acquire(nil); !errors.Is(err, tier.ErrNilContext) {
		t.Errorf("nil context: %v", err)
	}
	if _, err := l.Token(context.Background()); !errors.Is(err, tier.ErrNotHolder) {
		t.Errorf("Token without hold: %v", err)
	}
	l.Close()
	if _, err := l.Acquire(context.Background()); !errors.Is(err, tier.ErrClosed) {
		t.Errorf("Acquire after Close: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestCloseWakesWaiters(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	l := newLock(t, s, zktest.Path(t))
	ctx := ctxT(t, 10*time.Second)
	held, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { _, err := l.Acquire(ctx); errc <- err }()
	time.Sleep(50 * time.Millisecond)
	l.Close()
	if err := <-errc; !errors.Is(err, tier.ErrClosed) {
		t.Fatalf("waiter after Close: %v", err)
	}
	if held.Err() == nil || !errors.Is(context.Cause(held), tier.ErrClosed) {
		t.Fatalf("held context after Close: %v", context.Cause(held))
	}
}

// A context derived from a held one carries the hold: it re-enters, and
// can release, from any goroutine. That is the documented rule (the hold
// belongs to the context, not to a goroutine); this test pins it down.
func TestDerivedContextCarriesHold(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	l := newLock(t, s, zktest.Path(t))
	held, err := l.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	derived, cancel := context.WithCancel(held)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		again, err := l.Acquire(derived) // another goroutine, a derived context
		if err == nil && l.HoldCount(again) != 2 {
			err = fmt.Errorf("count %d after re-entry, want 2", l.HoldCount(again))
		}
		if err == nil {
			err = l.Release(again)
		}
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := l.Release(held); err != nil {
		t.Fatal(err)
	}
}

// A loss of the node between zklock's grant and the publication of the
// local hold (onZKLost finds no current hold to cancel) still ends the
// hold: Acquire returns a held context already cancelled with the loss.
// The hook deletes the node of a revocable lock (whose own-node watch is
// armed at once) and waits until the loss is told, just before the hold
// is published.
func TestLossBeforePublishEndsHold(t *testing.T) {
	servers := zktest.Servers(t)
	s, admin := connect(t, servers), connect(t, servers)
	p := zktest.Path(t)
	l := newLock(t, s, p, tier.WithRevocable())
	tier.SetPublishHookForTest(func(zh *zklock.Hold) {
		if err := admin.Conn().Delete(zh.Node(), -1); err != nil {
			t.Error(err)
		}
		select {
		case <-zh.Lost():
		case <-time.After(5 * time.Second):
			t.Error("the node's deletion was not told")
		}
	})
	defer tier.SetPublishHookForTest(nil)
	held, err := l.Acquire(ctxT(t, 10*time.Second))
	tier.SetPublishHookForTest(nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.Done():
		if c := context.Cause(held); !errors.Is(c, tier.ErrLockLost) || !errors.Is(c, zklock.ErrNodeDeleted) {
			t.Errorf("cause %v; want ErrLockLost wrapping ErrNodeDeleted", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a hold whose node was lost before it was published is live")
	}
	if err := l.Release(held); !errors.Is(err, tier.ErrLockLost) {
		t.Errorf("Release: %v; want ErrLockLost", err)
	}
}
