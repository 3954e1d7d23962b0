package zklock_test

import (
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
// back 600 ms, with T = 4 s (the test server's largest: a sync every T/8 =
// 500 ms, holds trusted for T/4 = 1 s after a sync's send time), from
// before the acquisition on: counted from the queueing, the second sync
// comes back about 200 ms after the deadline it was to renew, and the hold
// ended with ErrLeaseExpired. (A delay
// that jumps by more than about T/8 at once, or a server that answers
// later than the bound, still ends holds: nothing then shows that the
// leader heard from us in time.)
func TestLeaseCountsFromTheWrite(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	ctx := ctxT(t, 30*time.Second)
	s := connect(t, servers, zklock.WithSessionTimeout(4*time.Second))
	l := newLock(t, s, p)
	zklock.SetWriteHook(s, func(op int32, _ []byte) error {
		if op == zklock.OpSync {
			time.Sleep(600 * time.Millisecond)
		}
		return nil
	})
	defer zklock.SetWriteHook(s, nil)
	if err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Lost():
		t.Fatalf("hold lost while every sync was answered at once once written: %v", l.Err())
	case <-time.After(5 * time.Second):
	}
	zklock.SetWriteHook(s, nil)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
