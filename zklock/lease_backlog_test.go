package zklock_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// A session whose requests wait in the client before they are written (a
// backlog: thousands of acquisitions pipelined on one session, or a starved
// send loop) keeps its holds as long as each sync, once written, is
// answered within the bound: the lease counts from when the sync was
// written, not from when it was queued. Here every sync's write is held
// back 1.2 s, with T = 8 s (the hold idle, so the syncs go back to back,
// one queued as the previous one is answered, each held trusted for T/4 =
// 2 s after its send time: its write's start, capped at the previous
// write's plus T/8), from before the acquisition on. Counted from the
// write, each sync comes back about 0.6 s before the deadline it is to
// renew; counted from the queueing, about 0.4 s after it, and the hold
// ended with ErrLeaseExpired. (Until make test met a loss under load, T
// was 4 s and the delay 600 ms: margins of 0.3 and 0.2 s.) (A delay
// that jumps by more than about T/8 at once, or a server that answers
// later than the bound, still ends holds: nothing then shows that the
// leader heard from us in time.)
func TestLeaseCountsFromTheWrite(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	ctx := ctxT(t, 30*time.Second)
	s := connect(t, servers, zklock.WithSessionTimeout(8*time.Second))
	l := newLock(t, s, p)
	zklock.SetWriteHook(s, func(op int32, _ []byte) error {
		if op == zklock.OpSync {
			time.Sleep(1200 * time.Millisecond)
		}
		return nil
	})
	defer zklock.SetWriteHook(s, nil)
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Lost():
		t.Fatalf("hold lost while every sync was answered at once once written: %v", h.Err())
	case <-time.After(5 * time.Second):
	}
	zklock.SetWriteHook(s, nil)
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
}

// The cap on a sync's send time: a sync written after the session wrote
// nothing for a while (its send loop stalled) counts from the previous
// write plus T/8, not from its own write, since the argument in lease.go
// needs the request before the sync to be that recent. Here every sync's
// write is held back 1.8 s (0.45 T, T = 4 s; longer and go-zookeeper would time the silent connection out) while a waiter keeps the lease
// renewer busy: after the first held-back sync is answered, the lease must
// stay invalid (counted from its own write it would be valid for T/4, and
// a grant could then outlive the session at the leader).
func TestLeaseCapAfterSilence(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	ctx := ctxT(t, 30*time.Second)
	holder := newLock(t, connect(t, servers), p)
	hh, err := holder.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := connect(t, servers, zklock.WithSessionTimeout(4*time.Second))
	w := newLock(t, s, p)
	wctx, cancel := context.WithCancel(ctx)
	done := goAcquire(wctx, w)
	eventually(t, 10*time.Second, "the waiter's lease", func() bool { return zklock.LeaseValid(s) })
	syncs := zklock.Written(s, zklock.OpSync)
	zklock.SetWriteHook(s, func(op int32, _ []byte) error {
		if op == zklock.OpSync {
			time.Sleep(1800 * time.Millisecond)
		}
		return nil
	})
	eventually(t, 10*time.Second, "a held-back sync written", func() bool { return zklock.Written(s, zklock.OpSync) > syncs })
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if zklock.LeaseValid(s) {
			t.Fatal("lease valid on a sync written after 1.8 s of silence")
		}
	}
	zklock.SetWriteHook(s, nil)
	cancel()
	<-done
	if err := hh.Release(); err != nil {
		t.Fatal(err)
	}
}

// A busy session needs no sync: every write that succeeds renews the lease
// from its send time, so a session that acquires and releases without a
// pause for several lease periods sends no sync at all, and loses no hold.
func TestBusySessionSendsNoSync(t *testing.T) {
	s := connect(t, zktest.Servers(t), zklock.WithSessionTimeout(2*time.Second)) // lease period 250 ms
	l := newLock(t, s, zktest.Path(t))
	ctx := ctxT(t, 30*time.Second)
	h, err := l.Acquire(ctx) // the first hold starts the renewer
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	before := zklock.Written(s, zklock.OpSync)
	n := 0
	for start := time.Now(); time.Since(start) < 2*time.Second; n++ {
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Release(); err != nil {
			t.Fatalf("release %d: %v", n, err)
		}
	}
	syncs := zklock.Written(s, zklock.OpSync) - before
	t.Logf("%d acquisitions in 2 s (8 lease periods), %d syncs, lease %+v", n, syncs, s.LeaseStats())
	if syncs > 0 {
		t.Errorf("a busy session sent %d syncs: its writes should have renewed the lease", syncs)
	}
	if st := s.LeaseStats(); st.Lapses > 0 || st.Waits > 0 {
		t.Errorf("lease waits or lapses on a busy session: %+v", st)
	}
}

// With a round trip above the lease's bound (T/4) no proof renews the
// lease in time, so no grant is possible even on a free lock (issue 29,
// item 6). The wait cannot end well; it must not be silent: the session
// warns, naming the round trip and the bound, and counts the late proofs
// in LeaseStats, so an operator can tell a slow network from a held lock.
// Before, Acquire waited until its context ended, with nothing logged and
// nothing counted.
func TestRoundTripAboveTheBoundIsReported(t *testing.T) {
	const timeout = 2 * time.Second // B = 500 ms
	servers := zktest.Servers(t)
	proxy := proxyTo(t, servers[0])
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s := connect(t, []string{proxy.Addr()}, zklock.WithSessionTimeout(timeout), zklock.WithLogger(log))
	l := newLock(t, s, zktest.Path(t))
	proxy.SetLatency(300 * time.Millisecond) // a 600 ms round trip
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if h, err := l.Acquire(ctx); err == nil {
		_ = h.Release()
		t.Fatalf("granted with a round trip above the lease's bound")
	}
	st := s.LeaseStats()
	if st.LateProofs == 0 || st.LastLateRoundTrip < st.Bound || st.Bound != timeout/4 {
		t.Errorf("LeaseStats = %+v: want late proofs counted, with a round trip above the bound %v", st, timeout/4)
	}
	if out := logs.String(); !strings.Contains(out, "round_trip=") || !strings.Contains(out, "bound=500ms") {
		t.Errorf("no warning naming the round trip and the bound; logged:\n%s", out)
	}
	proxy.SetLatency(0)
	h, err := l.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatalf("Acquire once the round trip is short again: %v", err)
	}
	_ = h.Release()
}

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// A healthy but idle session (issue 37, item 5): with a round trip well
// under the lease's bound, no proof is late and no grant waits for the
// lease. Before: a proof's send time is capped at the previous write's
// start plus T/8 (lease.go), and on a session whose only traffic between
// acquisitions is go-zookeeper's pings (every T/3) that cap fell up to
// 5T/24 before the real send; the report took the capped time for the
// round trip (late proofs "of 554-656 ms" with a 226 ms round trip and
// T = 2 s) and the grant waited for another sync. Now the first write
// after a quiet spell has a sync written just before it (the one the
// renewer would have sent as the session became active), so its proof is
// not capped; and a late proof is one whose measured round trip is above
// the bound.
// The scene is the issue's, every time doubled (T = 4 s, a 680 ms round
// trip, quiet spells of 1.8 s): the same ratios to the bound, and twice the
// margin against a loaded machine's own delays (with T = 2 s, a run under
// CI's load saw one 588 ms round trip against the 500 ms bound).
func TestIdleSessionProofsAreOnTime(t *testing.T) {
	const timeout = 4 * time.Second // B = 1 s, pings every 1.33 s
	servers := zktest.Servers(t)
	proxy := proxyTo(t, servers[0])
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s := connect(t, []string{proxy.Addr()}, zklock.WithSessionTimeout(timeout), zklock.WithLogger(log))
	l := newLock(t, s, zktest.Path(t))
	ctx := ctxT(t, 60*time.Second)
	acquire := func() {
		t.Helper()
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
	}
	acquire()                                // the path made, the first lease earned
	proxy.SetLatency(340 * time.Millisecond) // a 680 ms round trip
	before := s.LeaseStats()
	for range 6 {
		time.Sleep(1800 * time.Millisecond) // quiet: the session's only writes are pings
		acquire()
	}
	st := s.LeaseStats()
	t.Logf("lease after 6 acquisitions on an idle session: %+v (before: %+v)", st, before)
	if late := st.LateProofs - before.LateProofs; late > 0 {
		t.Errorf("%d late proofs reported (last round trip %v) with a 680 ms round trip under a %v bound", late, st.LastLateRoundTrip, st.Bound)
	}
	if waits := st.Waits - before.Waits; waits > 0 {
		t.Errorf("%d grants waited for the lease on a healthy idle session", waits)
	}
	if out := logs.String(); strings.Contains(out, "round trip above") {
		t.Errorf("a false alarm was logged:\n%s", out)
	}
}
