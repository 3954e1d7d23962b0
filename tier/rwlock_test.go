package tier_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

func newRW(t testing.TB, s *zklock.Session, path string, opts ...tier.Option) *tier.RWLock {
	t.Helper()
	rw, err := tier.NewRWLock(s, path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rw.Close() })
	return rw
}

func countMarker(kids []string, marker string) int {
	n := 0
	for _, k := range kids {
		if strings.Contains(k, marker) {
			n++
		}
	}
	return n
}

// Local rules: readers share one read node; re-entry by held context;
// upgrade refused; downgrade; a local writer waits for local readers and
// never queues its node behind our own read node.
func TestRWLocalRules(t *testing.T) {
	servers := zktest.Servers(t)
	s := connect(t, servers)
	path := zktest.Path(t)
	rw := newRW(t, s, path)
	ctx := ctxT(t, 20*time.Second)

	var helds []context.Context
	for range 5 {
		h, err := rw.RLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		helds = append(helds, h)
	}
	kids := children(t, s.Conn(), path)
	if len(kids) != 1 || countMarker(kids, "-__READ__") != 1 {
		t.Fatalf("5 local readers: queue %v; want one read node", kids)
	}
	// Re-entry by context, no new node.
	if again, err := rw.RLock(helds[0]); err != nil || again != helds[0] {
		t.Fatalf("read re-entry: %v", err)
	}
	// Upgrade refused, at once.
	if _, err := rw.Lock(helds[0]); !errors.Is(err, tier.ErrUpgrade) {
		t.Fatalf("upgrade: %v; want ErrUpgrade", err)
	}
	// A writer with a fresh context waits for the readers (no self-deadlock,
	// no write node while they hold).
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err := rw.Lock(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("writer under local readers: %v; want a timeout", err)
	}
	if kids := children(t, s.Conn(), path); countMarker(kids, "-__WRIT__") != 0 {
		t.Fatalf("a write node was queued while local readers held: %v", kids)
	}
	if ok := func() bool { _, ok, _ := rw.TryLock(ctx); return ok }(); ok {
		t.Fatal("TryLock under local readers succeeded")
	}
	got := make(chan context.Context, 1)
	go func() {
		h, err := rw.Lock(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- h
	}()
	time.Sleep(50 * time.Millisecond) // let the writer queue at the gate
	// A new reader queues behind the waiting writer (writers not starved).
	if _, ok, _ := rw.TryRLock(ctx); ok {
		t.Fatal("TryRLock overtook a waiting writer")
	}
	if err := rw.Release(helds[0]); err != nil { // the re-entry
		t.Fatal(err)
	}
	for _, h := range helds {
		if err := rw.Release(h); err != nil {
			t.Fatal(err)
		}
	}
	if err := rw.Release(helds[0]); !errors.Is(err, tier.ErrNotHolder) {
		t.Fatalf("extra Release: %v; want ErrNotHolder", err)
	}
	var wctx context.Context
	select {
	case wctx = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("writer not admitted after the readers left")
	}
	if tok, err := rw.Token(wctx); err != nil || tok <= 0 {
		t.Fatalf("writer token %d, %v", tok, err)
	}
	// Downgrade: read under the write hold, then end the write hold.
	rctx, err := rw.RLock(wctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := rw.Release(wctx); err != nil {
		t.Fatal(err)
	}
	if rctx.Err() != nil {
		t.Fatalf("downgraded read hold cancelled: %v", context.Cause(rctx))
	}
	kids = children(t, s.Conn(), path)
	eventually(t, 5*time.Second, "write node gone after downgrade", func() bool {
		kids = children(t, s.Conn(), path)
		return countMarker(kids, "-__WRIT__") == 0 && countMarker(kids, "-__READ__") == 1
	})
	if _, err := rw.Lock(rctx); !errors.Is(err, tier.ErrUpgrade) {
		t.Fatalf("upgrade after downgrade: %v", err)
	}
	if err := rw.Release(rctx); err != nil {
		t.Fatal(err)
	}
	if rctx.Err() == nil {
		t.Fatal("released hold's context not cancelled")
	}
	eventually(t, 5*time.Second, "empty queue", func() bool { return len(children(t, s.Conn(), path)) == 0 })
}

// CURATOR-621: after a downgrade, a writer of another process that queued
// while we held the write lock must not get in while we still read.
func TestRWDowngradeKeepsForeignWriterOut(t *testing.T) {
	servers := zktest.Servers(t)
	a, b := connect(t, servers), connect(t, servers)
	path := zktest.Path(t)
	ra, rb := newRW(t, a, path), newRW(t, b, path)
	ctx := ctxT(t, 20*time.Second)
	wctx, err := ra.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	granted := make(chan context.Context, 1)
	go func() {
		h, err := rb.Lock(ctx)
		if err != nil {
			t.Error(err)
		}
		granted <- h
	}()
	eventually(t, 5*time.Second, "B's writer queued", func() bool { return len(children(t, a.Conn(), path)) == 2 })
	rctx, err := ra.RLock(wctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ra.Release(wctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-granted:
		t.Fatal("B's writer got in while A reads after its downgrade")
	case <-time.After(500 * time.Millisecond):
	}
	if rctx.Err() != nil {
		t.Fatalf("A's read hold ended: %v", context.Cause(rctx))
	}
	if err := ra.Release(rctx); err != nil {
		t.Fatal(err)
	}
	select {
	case h := <-granted:
		if err := rb.Release(h); err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("B's writer never got in")
	}
	eventually(t, 5*time.Second, "empty queue", func() bool { return len(children(t, a.Conn(), path)) == 0 })
}

// Several sessions (processes, to ZooKeeper) × goroutines, mostly reads:
// the independent checker finds no writer overlapping anyone, readers
// sharing (more than one in at once), and writer tokens increasing.
func TestRWMultiSession(t *testing.T) {
	const procs, goroutines, rounds = 3, 4, 25
	servers := zktest.Servers(t)
	path := zktest.Path(t)
	ctx := ctxT(t, 60*time.Second)
	var rec recorder
	var wg sync.WaitGroup
	for p := range procs {
		s := connect(t, servers)
		rw := newRW(t, s, path)
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				who := fmt.Sprintf("p%dg%d", p, g)
				rnd := rand.New(rand.NewPCG(uint64(p), uint64(g)))
				for range rounds {
					if rnd.IntN(10) < 8 {
						h, err := rw.RLock(ctx)
						if err != nil {
							t.Error(err)
							return
						}
						rec.add(record{kind: recR, who: who})
						time.Sleep(time.Duration(rnd.IntN(2000)) * time.Microsecond)
						rec.add(record{kind: recRx, who: who})
						if err := rw.Release(h); err != nil {
							t.Error(err)
							return
						}
						continue
					}
					h, err := rw.Lock(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					tok, _ := rw.Token(h)
					rec.add(record{kind: recW, who: who, token: tok})
					time.Sleep(time.Duration(rnd.IntN(1000)) * time.Microsecond)
					rec.add(record{kind: recWx, who: who})
					if err := rw.Release(h); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
	}
	zktest.Wait(t, "the goroutines", &wg)
	v := checkRW(rec.log)
	t.Logf("%d reads, %d writes over %d sessions x %d goroutines; reader concurrency %d; %d violations",
		v.reads, v.writes, procs, goroutines, v.maxReaders, len(v.violations))
	for _, s := range v.violations {
		t.Error(s)
	}
	if v.maxReaders < 2 {
		t.Errorf("readers never shared (at most %d at once)", v.maxReaders)
	}
	obs := connect(t, servers)
	eventually(t, 5*time.Second, "empty queue", func() bool { return len(children(t, obs.Conn(), path)) == 0 })
}

// Issue 21, item 2: one process's overlapping readers must not starve a
// writer of another process. Four goroutines of A read in a loop, 20 ms
// each, staggered so that A always has a reader in; B's writer queues and
// must be granted once the readers that were in when it queued are done,
// not after A stops reading.
func TestRWWriterNotStarvedByOverlappingReaders(t *testing.T) {
	servers := zktest.Servers(t)
	a, b := connect(t, servers), connect(t, servers)
	path := zktest.Path(t)
	ra, rb := newRW(t, a, path), newRW(t, b, path)
	ctx := ctxT(t, 30*time.Second)
	stop := make(chan struct{})
	var reads atomic.Int64
	var readers sync.WaitGroup
	for i := range 4 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			time.Sleep(time.Duration(i) * 5 * time.Millisecond)
			for {
				select {
				case <-stop:
					return
				default:
				}
				h, err := ra.RLock(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				reads.Add(1)
				time.Sleep(20 * time.Millisecond)
				if err := ra.Release(h); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	defer func() { close(stop); readers.Wait() }()
	zktest.Eventually(t, 5*time.Second, "A reading", func() bool { return reads.Load() > 10 })
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start, before := time.Now(), reads.Load()
	h, err := rb.Lock(wctx)
	if err != nil {
		t.Fatalf("B's writer starved: %v after %v, while A made %d reads", err, time.Since(start).Round(time.Millisecond), reads.Load()-before)
	}
	waited, during := time.Since(start), reads.Load()-before
	if err := rb.Release(h); err != nil {
		t.Fatal(err)
	}
	t.Logf("B's writer granted after %v; A made %d reads meanwhile", waited.Round(time.Millisecond), during)
	// The readers in when B queued hold 20 ms; a few more may have been
	// admitted before B's node was seen. Dozens mean A kept the read node.
	if during > 20 {
		t.Errorf("A made %d reads while B's writer waited %v: readers kept riding the read node", during, waited)
	}
}

// Issue 21, item 9: a downgrade whose new read node is lost between its
// grant and the move of the readers onto it must tell those readers.
func TestRWDowngradeReadNodeLostBeforeRewire(t *testing.T) {
	servers := zktest.Servers(t)
	s, admin := connect(t, servers), connect(t, servers)
	path := zktest.Path(t)
	rw := newRW(t, s, path)
	ctx := ctxT(t, 10*time.Second)
	w, err := rw.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rw.RLock(w)
	if err != nil {
		t.Fatal(err)
	}
	tier.SetDowngradeHookForTest(func(node string) {
		// Someone deletes the new read node, and its hold is found lost,
		// before the readers move onto it.
		if err := admin.Conn().Delete(node, -1); err != nil {
			t.Error(err)
		}
		time.Sleep(500 * time.Millisecond)
	})
	defer tier.SetDowngradeHookForTest(nil)
	if err := rw.Release(w); err != nil {
		t.Fatal(err)
	}
	tier.SetDowngradeHookForTest(nil)
	select {
	case <-r.Done():
		if !errors.Is(context.Cause(r), tier.ErrLockLost) {
			t.Errorf("reader's cause %v; want ErrLockLost", context.Cause(r))
		}
	case <-time.After(3 * time.Second):
		t.Errorf("the reader riding the lost read node was not told (queue %v)", children(t, admin.Conn(), path))
	}
	_ = rw.Release(r)
}
