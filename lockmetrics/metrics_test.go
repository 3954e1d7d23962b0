package lockmetrics_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/lockmetrics"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

func newCollector(t testing.TB, opts ...lockmetrics.Option) (*lockmetrics.Collector, *endpoint) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	m, err := lockmetrics.New(reg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m, serve(t, reg)
}

func newLock(t testing.TB, s *zklock.Session, path string, opts ...tier.Option) *tier.Lock {
	t.Helper()
	l, err := tier.New(s, path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// One measured process and one other process on a lock: waiters while the
// other holds it, acquisitions by tier (checked against the fencing tokens:
// a hand-off keeps its node's token), failures by reason, a busy
// TryAcquire that counts as nothing, and a hold ended by Close.
func TestScrapeCounts(t *testing.T) {
	m, ep := newCollector(t, lockmetrics.WithLockName(func(string) string { return "jobs" }))
	servers := zktest.Servers(t)
	s1 := zktest.Connect(t, servers, zklock.WithStateListener(m.SessionListener()))
	s2 := zktest.Connect(t, servers)
	path := zktest.Path(t)
	l1 := newLock(t, s1, path, tier.WithHandoff(8, time.Minute), tier.WithObserver(m.Observe))
	l2 := newLock(t, s2, path)
	ctx := ctxT(t, 60*time.Second)
	ep.eventually("the session is up", map[string]float64{
		`tierlock_session_state{state=connected}`:             1,
		`tierlock_session_state{state=connecting}`:            0,
		`tierlock_session_transitions_total{state=connected}`: 1,
	})

	other, err := l2.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := l1.TryAcquire(ctx); ok || err != nil {
		t.Fatalf("TryAcquire on a busy lock: %v, %v", ok, err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = l1.Acquire(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire past its deadline: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l1.Acquire(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire cancelled: %v", err)
	}

	// Three goroutines wait behind the other process, then hold one after
	// the other, each releasing when told.
	const n = 3
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		tokens  []int64
		release = make(chan struct{})
	)
	for range n {
		wg.Go(func() {
			held, err := l1.Acquire(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			tok, _ := l1.Token(held)
			mu.Lock()
			tokens = append(tokens, tok)
			mu.Unlock()
			<-release
			if err := l1.Release(held); err != nil {
				t.Error(err)
			}
		})
	}
	ep.eventually("three waiters", map[string]float64{
		`tierlock_waiters{lock=jobs}`: 3,
		`tierlock_holders{lock=jobs}`: 0,
	})
	if err := l2.Release(other); err != nil {
		t.Fatal(err)
	}
	ep.eventually("one holder", map[string]float64{
		`tierlock_waiters{lock=jobs}`: n - 1,
		`tierlock_holders{lock=jobs}`: 1,
	})
	for range n {
		release <- struct{}{}
	}
	zktest.Wait(t, "the three holders", &wg)
	viaZK := 1
	for i := 1; i < len(tokens); i++ {
		if tokens[i] != tokens[i-1] {
			viaZK++
		}
	}
	t.Logf("tokens %v: %d through ZooKeeper, %d handed off", tokens, viaZK, n-viaZK)
	ep.expect(map[string]float64{
		`tierlock_acquisitions_total{lock=jobs,tier=zookeeper}`:               float64(viaZK),
		`tierlock_acquisitions_total{lock=jobs,tier=handoff}`:                 float64(n - viaZK),
		`tierlock_waiters{lock=jobs}`:                                         0,
		`tierlock_holders{lock=jobs}`:                                         0,
		`tierlock_acquire_wait_seconds{lock=jobs,outcome=acquired}`:           n,
		`tierlock_acquire_wait_seconds{lock=jobs,outcome=canceled}`:           2, // the missed deadline and the cancellation
		`tierlock_acquire_wait_seconds{lock=jobs,outcome=failed}`:             0,
		`tierlock_hold_seconds{lock=jobs}`:                                    n,
		`tierlock_acquire_failures_total{lock=jobs,reason=deadline_exceeded}`: 1,
		`tierlock_acquire_failures_total{lock=jobs,reason=canceled}`:          1,
		`tierlock_acquire_failures_total{lock=jobs,reason=closed}`:            0,
		`tierlock_acquire_failures_total{lock=jobs,reason=error}`:             0,
		`tierlock_holds_lost_total{lock=jobs,reason=node_deleted}`:            0,
		`tierlock_revocations_total{lock=jobs}`:                               0,
		`tierlock_guarded_write_failures_total{lock=jobs}`:                    0,
	})

	// Close ends a hold whose Release then finds nothing: the holders
	// gauge must come down all the same.
	held, err := l1.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ep.expect(map[string]float64{`tierlock_holders{lock=jobs}`: 1})
	if err := l1.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l1.Release(held); !errors.Is(err, tier.ErrClosed) {
		t.Fatalf("Release after Close: %v", err)
	}
	if _, err := l1.Acquire(ctx); !errors.Is(err, tier.ErrClosed) {
		t.Fatalf("Acquire after Close: %v", err)
	}
	ep.expect(map[string]float64{
		`tierlock_holders{lock=jobs}`:                              0,
		`tierlock_waiters{lock=jobs}`:                              0,
		`tierlock_hold_seconds{lock=jobs}`:                         n + 1,
		`tierlock_acquire_failures_total{lock=jobs,reason=closed}`: 1,
		`tierlock_acquire_wait_seconds{lock=jobs,outcome=failed}`:  1, // the Acquire after Close
	})
}

// Losses by cause, as real faults cause them: the node deleted by another
// client, the connection dropped (a fault proxy between the session and
// the server), the session closed under a hold; and the session's states
// along the way.
func TestScrapeLosses(t *testing.T) {
	m, ep := newCollector(t)
	servers := zktest.Servers(t)
	px, err := faultproxy.New(servers[0])
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	// A long session timeout: the lease (a quarter of it) must not expire
	// by itself on a loaded machine and add a loss the test did not cause.
	s := zktest.Connect(t, []string{px.Addr()}, zklock.WithStateListener(m.SessionListener()),
		zklock.WithSessionTimeout(10*time.Second))
	admin := zktest.Connect(t, servers)
	path := zktest.Path(t)
	l := newLock(t, s, path, tier.WithObserver(m.Observe))
	ctx := ctxT(t, 60*time.Second)
	ep.eventually("the session is up", map[string]float64{`tierlock_session_state{state=connected}`: 1})

	causes := map[string]error{
		"disconnected": tier.ErrDisconnected, "lease_expired": tier.ErrLeaseExpired,
		"session_expired": tier.ErrSessionExpired, "node_deleted": tier.ErrNodeDeleted,
		"session_closed": tier.ErrSessionClosed,
	}
	counted := map[string]float64{} // losses by reason label, as the test caused them
	for label := range causes {
		counted[`tierlock_holds_lost_total{lock=all,reason=`+label+`}`] = 0
	}
	counted[`tierlock_holds_lost_total{lock=all,reason=other}`] = 0
	// lose takes a hold, causes a fault, and checks that the hold was lost
	// with one of the causes allowed, and counted under it and nothing else.
	lose := func(what string, fault func(), allowed ...error) {
		t.Helper()
		held, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		fault()
		<-held.Done()
		cause := context.Cause(held)
		label := ""
		for name, err := range causes {
			if errors.Is(cause, err) {
				label = name
			}
		}
		ok := false
		for _, a := range allowed {
			ok = ok || errors.Is(cause, a)
		}
		if !ok || label == "" {
			t.Fatalf("%s: lost with %v, want one of %v", what, cause, allowed)
		}
		counted[`tierlock_holds_lost_total{lock=all,reason=`+label+`}`]++
		want := map[string]float64{`tierlock_holders{lock=all}`: 1} // until Release
		for k, v := range counted {
			want[k] = v
		}
		ep.eventually(what, want)
		if err := l.Release(held); !errors.Is(err, tier.ErrLockLost) {
			t.Fatalf("%s: Release of a lost hold: %v", what, err)
		}
		ep.expect(map[string]float64{`tierlock_holders{lock=all}`: 0})
	}

	lose("node deleted", func() {
		for _, c := range zktest.Children(t, admin.Conn(), path) {
			if err := admin.Conn().Delete(path+"/"+c, -1); err != nil {
				t.Fatal(err)
			}
		}
	}, tier.ErrNodeDeleted)

	// A dropped connection is told as a disconnection, or as the lease
	// expiring when the lease's check noticed first.
	lose("connection dropped", px.DropAll, tier.ErrDisconnected, tier.ErrLeaseExpired)
	ep.eventually("reconnected", map[string]float64{
		`tierlock_session_state{state=connected}`:             1,
		`tierlock_session_state{state=disconnected}`:          0,
		`tierlock_session_transitions_total{state=connected}`: 2,
	})
	if v := scraped(ep.scrape()).value(`tierlock_session_transitions_total`, "state=disconnected"); v < 1 {
		t.Errorf("no disconnection counted: %v", v)
	}

	lose("session closed", func() { s.Close() }, tier.ErrSessionClosed)
	ep.expect(map[string]float64{
		`tierlock_session_state{state=connected}`:              0,
		`tierlock_session_state{state=closed}`:                 1,
		`tierlock_session_transitions_total{state=closed}`:     1,
		`tierlock_acquisitions_total{lock=all,tier=zookeeper}`: 3,
	})
}

// Goroutines mixing blocking acquisitions that succeed, time out or are
// cancelled with tries and re-entries: whatever the interleaving, every
// finished call leaves the waiters and holders gauges where they were
// (zero at the end), and the counters add up to the calls the test made.
func TestGaugesBalance(t *testing.T) {
	m, ep := newCollector(t)
	s := zktest.Connect(t, zktest.Servers(t))
	l := newLock(t, s, zktest.Path(t), tier.WithHandoff(4, 10*time.Millisecond), tier.WithObserver(m.Observe))
	ctx := ctxT(t, 60*time.Second)
	const goroutines, rounds = 6, 25
	var acquired, failed, tries sync.Map // per goroutine counts, summed below
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			var acq, fail, try int
			for i := range rounds {
				var held context.Context
				var err error
				switch (g + i) % 4 {
				case 0: // a try, which may find the lock busy
					var ok bool
					held, ok, err = l.TryAcquire(ctx)
					if ok {
						try++
					} else if err == nil {
						continue
					}
				case 1: // a deadline that is often too short
					short, cancel := context.WithTimeout(ctx, time.Duration(i%3)*time.Millisecond)
					held, err = l.Acquire(short)
					cancel()
				default:
					held, err = l.Acquire(ctx)
				}
				if err != nil {
					fail++
					continue
				}
				if (g+i)%4 != 0 {
					acq++
				}
				// A re-entry is neither a waiter nor an acquisition.
				if _, err := l.Acquire(held); err != nil {
					t.Error(err)
				}
				l.Release(held)
				time.Sleep(time.Duration(i%2) * time.Millisecond)
				if err := l.Release(held); err != nil {
					t.Error(err)
				}
			}
			acquired.Store(g, acq)
			failed.Store(g, fail)
			tries.Store(g, try)
		})
	}
	zktest.Wait(t, "the goroutines", &wg)
	// Tries that surely succeed, and one that surely fails (a cancelled
	// context): neither kind was ever a waiter.
	for range 3 {
		held, ok, err := l.TryAcquire(ctx)
		if !ok || err != nil {
			t.Fatalf("uncontended TryAcquire: %v, %v", ok, err)
		}
		l.Release(held)
	}
	tries.Store(goroutines, 3)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := l.TryAcquire(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("TryAcquire cancelled: %v", err)
	}
	failed.Store(goroutines, 1)
	sum := func(m *sync.Map) (n int) {
		m.Range(func(_, v any) bool { n += v.(int); return true })
		return n
	}
	holds := sum(&acquired) + sum(&tries)
	t.Logf("%d blocking acquisitions, %d tries that got the lock, %d failures", sum(&acquired), sum(&tries), sum(&failed))
	s2 := scraped(ep.scrape())
	got := s2.value(`tierlock_acquisitions_total`, "tier=zookeeper") + s2.value(`tierlock_acquisitions_total`, "tier=handoff")
	if got != float64(holds) {
		t.Errorf("acquisitions_total: %v, the test made %d", got, holds)
	}
	fails := 0.0
	for _, r := range []string{"canceled", "deadline_exceeded", "closed", "error"} {
		fails += s2.value(`tierlock_acquire_failures_total`, "reason="+r)
	}
	if fails != float64(sum(&failed)) {
		t.Errorf("acquire_failures_total: %v, the test saw %d", fails, sum(&failed))
	}
	wantWaits(t, s2, float64(holds), fails)
	ep.expect(map[string]float64{
		`tierlock_waiters{lock=all}`:      0,
		`tierlock_holders{lock=all}`:      0,
		`tierlock_hold_seconds{lock=all}`: float64(holds),
	})
}

// wantWaits checks that every wait that ended is in the wait histogram,
// under its outcome: acquired ones, and failed ones (canceled or failed).
func wantWaits(t *testing.T, s scraped, acquired, failed float64) {
	t.Helper()
	got := s.value(`tierlock_acquire_wait_seconds`, "outcome=acquired")
	if got != acquired {
		t.Errorf("acquire_wait_seconds{outcome=acquired}: %v, the test made %v", got, acquired)
	}
	got = s.value(`tierlock_acquire_wait_seconds`, "outcome=canceled") + s.value(`tierlock_acquire_wait_seconds`, "outcome=failed")
	if got != failed {
		t.Errorf("acquire_wait_seconds{outcome=canceled|failed}: %v, the test saw %v fail", got, failed)
	}
}
