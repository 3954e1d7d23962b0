package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// Item 6 of the fifth review: a refused batch's other writes go again in
// a bounded number of round trips. One stale transaction at the head of a
// batch that also carries fifty paths' released nodes' deletes and their
// next creates: before the fix the others went apart, each alone, and
// stopped at every second write of a path, about two requests a round
// trip: 100 requests in 51 rounds (1.3-1.7 s in the review). They need
// one more request.
func TestRefusedBatchGoesAgainAtOnce(t *testing.T) {
	servers := zktest.Servers(t)
	s := connect(t, servers)
	root := zktest.Path(t)
	if err := zkCreateAll(s.Conn(), root+"/data"); err != nil {
		t.Fatal(err)
	}
	const n = 50
	locks := make([]*zklock.Lock, n)
	holds := make([]*zklock.Hold, n)
	for i := range locks {
		locks[i] = newLock(t, s, fmt.Sprintf("%s/k%d", root, i))
		h, err := locks[i].Acquire(ctxT(t, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		holds[i] = h
	}
	eventually(t, 5*time.Second, "the writer idle", func() bool { return zklock.WriterIdleForTest(s) })
	ctx := ctxT(t, 30*time.Second)
	let := zklock.HoldWriterForTest()
	defer let()
	stale := make(chan error, 1)
	go func() {
		_, err := s.Txn(ctx, &zk.SetDataRequest{Path: root + "/data", Version: 7})
		stale <- err
	}()
	eventually(t, 5*time.Second, "the stale write queued", func() bool { return zklock.QueuedWritesForTest(s) == 1 })
	for _, h := range holds {
		_ = h.Release()
	}
	var got []<-chan acquired
	for _, l := range locks {
		got = append(got, goAcquire(ctx, l))
	}
	eventually(t, 5*time.Second, "every write queued", func() bool { return zklock.QueuedWritesForTest(s) == 1+2*n })
	writes := func() int64 {
		return zklock.Written(s, zklock.OpMulti) + zklock.Written(s, zklock.OpCreate) + zklock.Written(s, zklock.OpDelete)
	}
	w0 := writes()
	start := time.Now()
	let()
	if err := <-stale; !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("the stale write: %v", err)
	}
	for i, c := range got {
		r := <-c
		if r.err != nil {
			t.Fatalf("k%d: %v", i, r.err)
		}
		defer r.h.Release()
	}
	took := time.Since(start)
	if k := writes() - w0; k > 2 {
		t.Errorf("%d write requests for a refused batch of %d writes (in %v); want 2: the refused one, then the others together", k, 1+2*n, took)
	}
	_ = context.Canceled
}
