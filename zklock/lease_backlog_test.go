package zklock_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
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
// answered in time: the lease dates a proof by its write, not by its
// queueing. Here every sync's write is held back d = 6 s, with T = 40 s
// (R = 35 s, π = 12.5 s with the tick unknown, the renewer's period 5 s):
// the hold idle, the syncs go one after the other, s = d apart, each a
// chain's k once answered and the next one's l. A chain's touch is a sync
// written up to s before w_k − π; its l is answered about s after w_k; the
// next renewal comes s later again: the deadline is at least R − π − 3s =
// 4.5 s ahead at its lowest, the margin a loaded machine's stalls and
// delays must stay within. Each sync is dated by its own write: dated by
// the first request written after its queueing, as before, a request of
// the lock's written there (the own-node watch's read, say) dated it a
// step early, and the hold lapsed 47 s after the connect in four of
// thirteen loaded make tests (TestSyncDatedByItsOwnWrite). A ping dates no
// proof (wire.TestPingDatesNoProof).
// Dated from its queueing, each k would be d older, 1.5 s past the
// deadline: the lease lapses. The hold lasts until 60 s after the connect,
// past the connect answer's own reach (R), so that only chains carry it.
// (A delay that jumps by more than the lease's slack at once, or a server
// that answers later, still ends holds: nothing then shows that the
// leader heard from us in time.)
func TestLeaseCountsFromTheWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a hold of 60 s with syncs held back")
	}
	const timeout, holdBack = 40 * time.Second, 6 * time.Second
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	ctx := ctxT(t, 120*time.Second)
	// The lock's path made first, by another session, so that the hold is
	// granted soon after the connect: the acquisition's requests (the
	// path's containers, a level at a time) queued behind held-back syncs
	// and it was granted only at 36 s.
	os := connect(t, servers)
	first, err := newLock(t, os, p).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 10*time.Second, "the first node's delete", func() bool {
		return len(zktest.Children(t, os.Conn(), p)) == 0
	})
	connected := time.Now()
	s := connect(t, servers, zklock.WithSessionTimeout(timeout))
	l := newLock(t, s, p)
	// The hook holds each sync back on go-zookeeper's send loop; when the
	// test ends, the hold still under way is let go and awaited before the
	// session closes (its Cleanup runs after this one), so that nothing of
	// the test runs on: a 6-s sleep there outlived the test when it ran
	// alone, and goleak failed it.
	var (
		hookMu  sync.Mutex
		ended   bool
		holding sync.WaitGroup
	)
	letGo := make(chan struct{})
	zklock.SetWriteHook(s, func(op int32, _ []byte) error {
		if op != zklock.OpSync {
			return nil
		}
		hookMu.Lock()
		if ended {
			hookMu.Unlock()
			return nil
		}
		holding.Add(1)
		hookMu.Unlock()
		defer holding.Done()
		select {
		case <-time.After(holdBack):
		case <-letGo:
		}
		return nil
	})
	t.Cleanup(func() {
		zklock.SetWriteHook(s, nil)
		hookMu.Lock()
		ended = true
		hookMu.Unlock()
		close(letGo)
		zktest.Wait(t, "the write hook's held syncs", &holding)
	})
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Lost():
		t.Fatalf("hold lost %v after the connect while every sync was answered at once once written (%+v): %v",
			time.Since(connected).Round(time.Millisecond), s.LeaseStats(), h.Err())
	case <-time.After(time.Until(connected.Add(timeout * 3 / 2))):
	}
	zklock.SetWriteHook(s, nil)
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
}

// TestSyncDatedByItsOwnWrite: a sync queued while another request waits
// to be written is dated by its own write, not by the first request
// written after its queueing. Here that request's write (a read) is held
// until the sync is queued behind it, and the sync's own write is held
// back d more: dated by the read, the sync's k came d early (zklock's
// TestLeaseCountsFromTheWrite lapsed so, in four of thirteen loaded make
// tests: a request written just after a held-back sync's queueing). The
// sync is queued from the read's hold (on go-zookeeper's send loop, which
// waits there), 200 ms before the read goes: a margin for the sync's
// goroutine to note its place among the writes; later, the read would
// follow it and the test could not fail.
func TestSyncDatedByItsOwnWrite(t *testing.T) {
	const d = time.Second
	s := connect(t, zktest.Servers(t))
	read := zktest.Path(t) + "/a-read"
	var synced <-chan struct{}
	var syncFrom time.Time // when the sync's write was let go: its write began after
	var mu sync.Mutex
	zklock.SetWriteHook(s, func(op int32, b []byte) error {
		switch {
		case op == zklock.OpGetData && bytes.Contains(b, []byte(read)):
			mu.Lock()
			synced = zklock.RefreshLease(s)
			mu.Unlock()
			time.Sleep(200 * time.Millisecond)
		case op == zklock.OpSync:
			time.Sleep(d)
			mu.Lock()
			syncFrom = time.Now()
			mu.Unlock()
		}
		return nil
	})
	defer zklock.SetWriteHook(s, nil)
	if _, _, err := s.Conn().Get(read); err == nil {
		t.Fatal("the read found a node")
	}
	mu.Lock()
	done := synced
	mu.Unlock()
	if done == nil {
		t.Fatal("no sync was queued")
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the sync was not answered")
	}
	mu.Lock()
	from := syncFrom
	mu.Unlock()
	if k := zklock.LeaseLastK(s); k.Before(from) {
		t.Errorf("the sync dated %v before its write began (by the read's write)", from.Sub(k).Round(time.Millisecond))
	}
}

// A busy session needs no sync: its writes are the chains' k's and l's
// and their replies the touches (lease.go), so a session that acquires and
// releases without a pause for several lease periods sends no sync at all,
// and loses no hold. Without a pause is the test's to keep: a loaded make
// test's loop (one sync in 2 s) may stall; a sync is then what the lease
// needs. The loop's longest gap is measured on its own clock, and syncs
// fail the test only when no gap reached half a lease period.
func TestBusySessionSendsNoSync(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a 2-s acquire loop")
	}
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
	const halfPeriod = 125 * time.Millisecond
	n, longest, last := 0, time.Duration(0), time.Now()
	for start := time.Now(); time.Since(start) < 2*time.Second; n++ {
		if gap := time.Since(last); gap > longest {
			longest = gap
		}
		last = time.Now()
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Release(); err != nil {
			t.Fatalf("release %d: %v", n, err)
		}
	}
	syncs := zklock.Written(s, zklock.OpSync) - before
	t.Logf("%d acquisitions in 2 s (8 lease periods), the longest %v, %d syncs, lease %+v", n, longest.Round(time.Millisecond), syncs, s.LeaseStats())
	switch {
	case syncs == 0:
	case longest >= halfPeriod:
		t.Logf("%d syncs, the loop stalled %v (the machine): not a busy session's", syncs, longest.Round(time.Millisecond))
	default:
		t.Errorf("a busy session sent %d syncs, its longest acquisition %v: its writes should have renewed the lease", syncs, longest.Round(time.Millisecond))
	}
	if st := s.LeaseStats(); st.Lapses > 0 || st.Waits > 0 {
		t.Errorf("lease waits or lapses on a busy session: %+v", st)
	}
}

// With a round trip longer than the lease tolerates (a chain spans three
// round trips: a twelfth of T with the servers' tick unknown), no proof
// renews the lease in time, so no grant is possible even on a free lock
// (issue 29, item 6). The wait cannot end well; it must not be silent: the
// session warns, naming the round trip and the longest it tolerates, and
// counts the late proofs in LeaseStats, so an operator can tell a slow
// network from a held lock. Before, Acquire waited until its context
// ended, with nothing logged and nothing counted. A 600-ms round trip is
// above a sixth of T too, the longest with which a chain can renew the
// lease for a grant: the warning says that none can be made (with a
// shorter one, grants are only delayed: session.TestLeaseSlowRoundTripLine).
func TestRoundTripAboveTheBoundIsReported(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a 600-ms round trip through a proxy, about 4 s")
	}
	const timeout = 2 * time.Second // the longest round trip tolerated: T/12, 167 ms
	servers := zktest.Servers(t)
	proxy := proxyTo(t, servers[0])
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// The tick declared as T/2, the most the negotiation allows: the
	// bounds are then the ones the line names, not a probe's.
	s := connect(t, []string{proxy.Addr()}, zklock.WithSessionTimeout(timeout), zklock.WithLogger(log),
		zklock.WithServerTickTime(timeout/2))
	l := newLock(t, s, zktest.Path(t))
	proxy.SetLatency(300 * time.Millisecond) // a 600 ms round trip
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if h, err := l.Acquire(ctx); err == nil {
		_ = h.Release()
		t.Fatalf("granted with a round trip above what the lease tolerates")
	}
	st := s.LeaseStats()
	if st.LateProofs == 0 || st.LastLateRoundTrip < timeout/12 {
		t.Errorf("LeaseStats = %+v: want late proofs counted, with a round trip above %v", st, timeout/12)
	}
	if out := logs.String(); !strings.Contains(out, "round_trip=") || !strings.Contains(out, "max_round_trip=166.666666ms") ||
		!strings.Contains(out, "too long for any grant") || !strings.Contains(out, "max_grant_round_trip=333.333333ms") {
		t.Errorf("no warning naming the round trip, the longest tolerated, and that no grant can be made; logged:\n%s", out)
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
// under what the lease tolerates, no proof is reported late and no grant
// waits for the lease. On a session whose only traffic between
// acquisitions is go-zookeeper's pings (every T/3), a first acquisition's
// create closes a chain whose k is old: it renews nothing, and is not a
// late proof for that (its round trip is short); the sync that follows its
// answer closes a chain from a ping π before the create, which leaves the
// lease about T/10 ahead (lease.go) less three round trips, enough for the
// grant, which waited for that one sync (LeaseStats.Waits). (The scene had a 680 ms round trip with T = 4 s, which
// the lease before issue 55 tolerated; the chains tolerate T/12, 333 ms,
// and a first grant after a quiet spell about T/18, 222 ms.) T = 4 s, a
// 160 ms round trip, quiet spells of 1.8 s.
func TestIdleSessionProofsAreOnTime(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: spells of a 4-s session through a proxy, about 12 s")
	}
	const timeout = 4 * time.Second // pings every 1.33 s
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
	acquire()                               // the path made, the first lease earned
	proxy.SetLatency(80 * time.Millisecond) // a 160 ms round trip
	before := s.LeaseStats()
	for range 6 {
		time.Sleep(1800 * time.Millisecond) // quiet: the session's only writes are pings
		acquire()
	}
	st := s.LeaseStats()
	t.Logf("lease after 6 acquisitions on an idle session: %+v (before: %+v)", st, before)
	if late := st.LateProofs - before.LateProofs; late > 0 {
		t.Errorf("%d late proofs reported (last round trip %v) with a 160 ms round trip", late, st.LastLateRoundTrip)
	}
	// Each first acquisition after a quiet spell waits for one sync, the
	// chain's l, handed over once its create's answer came: no more.
	if waits := st.Waits - before.Waits; waits > 6 {
		t.Errorf("%d grants waited for the lease in 6 acquisitions on a healthy idle session", waits)
	}
	if st.Lapses > before.Lapses {
		t.Errorf("the lease lapsed on a healthy idle session: %+v", st)
	}
	if out := logs.String(); strings.Contains(out, "round trip too long") {
		t.Errorf("a false alarm was logged:\n%s", out)
	}
}

// A session busy on many paths answers thousands of replies a second: the
// tap's record of touches must reach back as far as a chain looks (π and
// two periods, lease.go), or no chain finds a touch old enough, and once
// the connect answer's lease runs out (7T/8) every grant waits for the
// lease. Here 64 goroutines on 64 paths acquire and release for 3T (T =
// 2 s); the tap kept every reply in 4,096 entries, a fraction of a second,
// and grants waited (issue 55's A/B: about 1,000 waits in 4 s of 4 x 1000
// x 1000).
func TestBusySessionKeepsItsLease(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a busy session for three lease periods, about 6 s")
	}
	const T = 2 * time.Second
	s := connect(t, zktest.Servers(t), zklock.WithSessionTimeout(T))
	root := zktest.Path(t)
	ctx := ctxT(t, 30*time.Second)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	end := time.Now().Add(3 * T)
	for g := range 64 {
		l := newLock(t, s, fmt.Sprintf("%s/k%d", root, g))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				h, err := l.Acquire(ctx)
				if err == nil {
					err = h.Release()
				}
				if err != nil {
					mu.Lock()
					firstErr = cmp.Or(firstErr, err)
					mu.Unlock()
					return
				}
			}
		}()
	}
	zktest.Wait(t, "the acquirers", &wg)
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	if st := s.LeaseStats(); st.Waits > 0 || st.Lapses > 0 {
		t.Errorf("a busy session waited for its lease: %+v", st)
	}
}
