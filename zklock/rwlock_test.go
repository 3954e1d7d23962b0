package zklock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// The read/write lock's rules (rwlock.go).

// Issue 21, item 5: taking the read lock while holding the write lock
// (the documented downgrade) must not wait behind a writer of another
// process that waits for our write lock: that would deadlock.
func TestRWDowngradeNeverWaitsBehindForeignWriter(t *testing.T) {
	servers := zktest.Servers(t)
	a, b, obs := connect(t, servers), connect(t, servers), connect(t, servers)
	path := zktest.Path(t)
	ra, err := zklock.NewRWLock(a, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	rb, err := zklock.NewRWLock(b, path)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	ctx := ctxT(t, 30*time.Second)
	wa, err := ra.WriteLock().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bDone := goAcquire(ctx, rb.WriteLock())
	eventually(t, 10*time.Second, "B's writer queued", func() bool { return len(children(t, obs.Conn(), path)) == 2 })
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	start := time.Now()
	rh, err := ra.ReadLock().Acquire(rctx)
	cancel()
	took := time.Since(start)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("downgrade behind a foreign writer waited %v for a lock that could never come", took.Round(time.Millisecond))
	} else if err == nil {
		t.Errorf("downgrade granted while a foreign writer precedes the read node")
		_ = rh.Release()
	}
	if !errors.Is(err, zklock.ErrDowngradeBlocked) {
		t.Errorf("downgrade behind a foreign writer: %v; want ErrDowngradeBlocked", err)
	}
	eventually(t, 5*time.Second, "no read node left: our write node and B's", func() bool {
		return len(children(t, obs.Conn(), path)) == 2
	})
	if err := wa.Release(); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-bDone:
		if r.err != nil {
			t.Fatalf("B: %v", r.err)
		}
		_ = r.h.Release()
	case <-time.After(10 * time.Second):
		t.Fatal("B never granted after A released")
	}
}
