package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// The cost claims of docs/design.md, each counted on the wire: what a
// request the lean path leaves out would cost if it came back.

// A hold that ends before the lease's bound (T/4) arms no watch on its own
// node: no read, no watch event. A revocable hold reads its node at once
// (a revocation request written while it waited must be seen).
func TestShortHoldSendsNoOwnWatch(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 20 holds against a lease's clock, about 2 s")
	}
	s := connect(t, zktest.Servers(t)) // T = 10 s: the bound is 2.5 s
	ctx := ctxT(t, 30*time.Second)
	for _, v := range []struct {
		name  string
		opts  []zklock.Option
		reads int64
	}{
		{"plain", nil, 0},
		{"revocable", []zklock.Option{zklock.WithRevocable()}, 20},
	} {
		l := newLock(t, s, zktest.Path(t), v.opts...)
		before := zklock.Written(s, zklock.OpGetData) + zklock.Written(s, zklock.OpExists)
		for i := 0; i < 20; i++ {
			h, err := l.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond) // a watch armed at once would be read by now
			if v.reads > 0 {
				// The read is armed at once, on a goroutine of its own.
				want := before + int64(i) + 1
				eventually(t, 5*time.Second, "the own-node read", func() bool {
					return zklock.Written(s, zklock.OpGetData) >= want
				})
			}
			if err := h.Release(); err != nil {
				t.Fatal(err)
			}
		}
		got := zklock.Written(s, zklock.OpGetData) + zklock.Written(s, zklock.OpExists) - before
		if got != v.reads {
			t.Errorf("%s: 20 short holds read their nodes %d times; want %d", v.name, got, v.reads)
		}
	}
}

// A release's delete goes out in the next create of the session, on the
// same path or on any other (one multi, no delete of its own). On a path
// whose parent is missing, the create fails at the server and so fails the
// multi: it fails alone (the acquisition makes the parent and creates
// again), and the delete it carried goes again, not lost. Each release and
// the acquisition after it meet behind the held writer (HoldWriterForTest),
// so that what is checked is what one batch carries, not whether the next
// create came within foldWait of the release on a loaded machine (it did
// not, once, under CI's load: "0 multis, 1 deletes"); that the lone delete
// waits foldWait for a create is TestReleaseFoldsWithAProcessorIdle's.
func TestReleaseFoldsIntoNextCreate(t *testing.T) {
	servers := zktest.Servers(t)
	s := connect(t, servers)
	obs := connect(t, servers).Conn()
	ctx := ctxT(t, 30*time.Second)
	root := zktest.Path(t)
	a, b, c := newLock(t, s, root+"/a"), newLock(t, s, root+"/b"), newLock(t, s, root+"/c")
	hb, err := b.Acquire(ctx) // b's path made
	if err != nil {
		t.Fatal(err)
	}
	if err := hb.Release(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "b's node deleted", func() bool { return len(children(t, obs, root+"/b")) == 0 })
	exists := func(node string) bool {
		ok, _, err := obs.Exists(node)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	acquire := func(l *zklock.Lock) (h *zklock.Hold, multis, deletes int64) {
		t.Helper()
		m0, d0 := zklock.Written(s, zklock.OpMulti), zklock.Written(s, zklock.OpDelete)
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return h, zklock.Written(s, zklock.OpMulti) - m0, zklock.Written(s, zklock.OpDelete) - d0
	}
	// releaseThenAcquire releases h and acquires l with the writer held
	// until both the delete and the create wait in its queue.
	releaseThenAcquire := func(h *zklock.Hold, l *zklock.Lock) (*zklock.Hold, int64, int64) {
		t.Helper()
		let := zklock.HoldWriterForTest()
		defer let()
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
		m0, d0 := zklock.Written(s, zklock.OpMulti), zklock.Written(s, zklock.OpDelete)
		type got struct {
			h   *zklock.Hold
			err error
		}
		done := make(chan got, 1)
		go func() {
			h, err := l.Acquire(ctx)
			done <- got{h, err}
		}()
		eventually(t, 5*time.Second, "the delete and the create queued", func() bool { return zklock.QueuedWritesForTest(s) == 2 })
		let()
		g := <-done
		if g.err != nil {
			t.Fatal(g.err)
		}
		return g.h, zklock.Written(s, zklock.OpMulti) - m0, zklock.Written(s, zklock.OpDelete) - d0
	}

	ha, _, _ := acquire(a)
	released := ha.Node()
	hb, multis, deletes := releaseThenAcquire(ha, b) // another path
	if multis != 1 || deletes != 0 || exists(released) {
		t.Errorf("acquire on another path after a release: %d multis, %d deletes, released node there: %v; want 1, 0, false",
			multis, deletes, exists(released))
	}

	released = hb.Node()
	hb, multis, deletes = releaseThenAcquire(hb, b) // the same path
	if multis != 1 || deletes != 0 || exists(released) {
		t.Errorf("acquire on the same path after a release: %d multis, %d deletes, released node there: %v; want 1, 0, false",
			multis, deletes, exists(released))
	}

	released = hb.Node()
	if err := hb.Release(); err != nil {
		t.Fatal(err)
	}
	hc, _, _ := acquire(c) // a path never locked: the multi fails on its create
	if hc.Node() == "" {
		t.Fatal("no node")
	}
	eventually(t, 5*time.Second, "the released node deleted all the same", func() bool { return !exists(released) })
	if err := hc.Release(); err != nil {
		t.Fatal(err)
	}
}

// The bound on requests in flight holds acquisitions back in the process
// while it is full; a release's delete and the lease's sync are exempt, so
// a burst can neither keep a node from going nor let the lease lapse.
func TestBoundHoldsAcquisitionsNotDeletesOrSync(t *testing.T) {
	servers := zktest.Servers(t)
	s := connect(t, servers, zklock.WithSessionTimeout(4*time.Second)) // a sync after 0.5 s of silence
	obs := connect(t, servers).Conn()
	ctx := ctxT(t, 30*time.Second)
	p := zktest.Path(t)
	held, other := newLock(t, s, p+"/held"), newLock(t, s, p+"/other")
	h, err := held.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := newLock(t, s, p+"/kept").Acquire(ctx) // keeps the renewer busy
	if err != nil {
		t.Fatal(err)
	}

	lapses := s.LeaseStats().Lapses // kept is held: a lapse would count
	giveBack := zklock.FillInflightForTest(s)
	defer giveBack()
	creates := zklock.Written(s, zklock.OpCreate) + zklock.Written(s, zklock.OpMulti)
	syncs := zklock.Written(s, zklock.OpSync)
	got := goAcquire(ctx, other)

	node := h.Node()
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the released node deleted", func() bool {
		ok, _, err := obs.Exists(node)
		return err == nil && !ok
	})
	eventually(t, 5*time.Second, "a lease sync", func() bool { return zklock.Written(s, zklock.OpSync) > syncs })
	if n := s.LeaseStats().Lapses - lapses; n != 0 {
		t.Errorf("the lease lapsed %d times while the bound was full", n)
	}
	select {
	case r := <-got:
		t.Fatalf("an acquisition went past a full bound: %v", r.err)
	default:
	}
	if n := zklock.Written(s, zklock.OpCreate) + zklock.Written(s, zklock.OpMulti) - creates; n != 0 {
		t.Errorf("%d creates written while the bound was full", n)
	}

	giveBack()
	r := <-got
	if r.err != nil {
		t.Fatalf("the held-back acquisition: %v", r.err)
	}
	for _, h := range []*zklock.Hold{r.h, kept} {
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
	}

	// Held back, an acquisition still honours its ctx.
	giveBack = zklock.FillInflightForTest(s)
	defer giveBack()
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := other.Acquire(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Acquire held back by the bound past its ctx: %v; want context.DeadlineExceeded", err)
	}
}

// RWLock.WriterWaiting lists the queue once, then keeps a children watch
// and answers from it until the queue changes.
func TestWriterWaitingListsOnlyWhenQueueChanged(t *testing.T) {
	servers := zktest.Servers(t)
	s, w := connect(t, servers), connect(t, servers)
	ctx := ctxT(t, 30*time.Second)
	p := zktest.Path(t)
	rw, err := zklock.NewRWLock(s, p)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	h, err := rw.ReadLock().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	listings := zklock.Written(s, zklock.OpGetChildren2)
	for i := 0; i < 100; i++ {
		waiting, err := rw.WriterWaiting(ctx)
		if err != nil || waiting {
			t.Fatalf("WriterWaiting = %v, %v with no writer", waiting, err)
		}
	}
	if n := zklock.Written(s, zklock.OpGetChildren2) - listings; n != 1 {
		t.Errorf("100 asks of an unchanged queue listed it %d times; want 1", n)
	}

	wrw, err := zklock.NewRWLock(w, p)
	if err != nil {
		t.Fatal(err)
	}
	defer wrw.Close()
	got := goAcquire(ctx, wrw.WriteLock())
	eventually(t, 5*time.Second, "the writer seen", func() bool {
		waiting, err := rw.WriterWaiting(ctx)
		return err == nil && waiting
	})
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	if err := r.h.Release(); err != nil {
		t.Fatal(err)
	}
}

// TestReleaseFoldsWithAProcessorIdle: a goroutine that releases and at
// once acquires another lock of the session carries the released node's
// delete in its create, although a processor is idle on which the writer
// could run at once: a queue of deletes alone waits foldWait for such a
// create. (When the sender of deletes only yielded, it sent the delete
// alone, before the create could take it, in a good part of such releases:
// 56 of 200.)
//
// One round, true under any load: the wait is set to 20 ms, and only a
// release whose next Acquire returned within it is judged: its delete was
// queued after the span began and the create before it ended, so a writer
// that waits could not have sent the delete alone (a timer fires late,
// never early). A release the machine delayed longer may go alone; the
// test counts those and says how many it judged.
func TestReleaseFoldsWithAProcessorIdle(t *testing.T) {
	const wait = 20 * time.Millisecond
	t.Cleanup(zklock.SetFoldWaitForTest(wait))
	s := connect(t, zktest.Servers(t))
	ctx := ctxT(t, 60*time.Second)
	root := zktest.Path(t)
	locks := [2]*zklock.Lock{newLock(t, s, root+"/a"), newLock(t, s, root+"/b")}
	acquire := func(l *zklock.Lock) *zklock.Hold {
		t.Helper()
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	for _, l := range locks { // both paths known: a create on either may carry a delete
		if err := acquire(l).Release(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * wait) // those releases' deletes go out, alone
	const releases = 200
	var judged, late, lateAlone int
	var bad []string
	h := acquire(locks[0])
	for i := range releases {
		time.Sleep(time.Millisecond) // a hold: the other processor idles
		d0 := zklock.Written(s, zklock.OpDelete)
		start := time.Now()
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
		h = acquire(locks[(i+1)%2])
		span := time.Since(start)
		alone := zklock.Written(s, zklock.OpDelete) - d0
		switch {
		case span >= wait:
			late++
			lateAlone += int(alone)
		case alone > 0:
			bad = append(bad, fmt.Sprintf("release %d: its delete went alone, the next create came %v after", i, span.Round(time.Microsecond)))
		default:
			judged++
		}
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d releases: %d judged, %d carried; %d whose next Acquire took %v or more (%d of their deletes alone, not judged)",
		releases, judged+len(bad), judged, late, wait, lateAlone)
	if len(bad) > 0 {
		t.Errorf("%d of %d releases followed within %v by a create sent their delete alone:\n%s",
			len(bad), judged+len(bad), wait, strings.Join(bad, "\n"))
	}
	if judged+len(bad) == 0 {
		t.Errorf("no release was followed within %v by the next Acquire's return (%d of %d took longer): nothing judged", wait, late, releases)
	}
}

// TestLoopOnOneLockKeepsNoReleasedNodes: a goroutine that takes one lock
// in a loop has each released node's delete carried by its next create on
// the path; the session must then forget the node. (It kept every one in
// its list of pending deletes, which only the flusher emptied: with the
// creates always first, the list grew by one entry per hold for the
// session's life.)
func TestLoopOnOneLockKeepsNoReleasedNodes(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	ctx := ctxT(t, 60*time.Second)
	l := newLock(t, s, zktest.Path(t))
	const holds = 300
	for range holds {
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
	}
	if n := zklock.QueuedWritesForTest(s); n > 1 {
		t.Errorf("after %d holds of one lock, the session keeps %d released nodes; want at most the last one", holds, n)
	}
}
