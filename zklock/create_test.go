package zklock_test

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// Creating our node (create.go): the create, the listing
// pipelined behind it, and what a failed create's unknown outcome asks for.

// A create whose write fails is retried, and leaves exactly one node.
// Before: Acquire returned the *net.OpError.
func TestFailedWriteOfCreateIsRetried(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	p := zktest.Path(t)
	l := newLock(t, s, p)
	ctx := ctxT(t, 20*time.Second)
	fired := failOnce(s, zklock.OpCreate, p+"/")
	defer zklock.SetWriteHook(s, nil)
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire after a failed write: %v", err)
	}
	if !fired.Load() {
		t.Fatal("the create's write was not failed")
	}
	if n := len(children(t, s.Conn(), p)); n != 1 {
		t.Fatalf("%d nodes queued, want 1", n)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
}

// Acquire honours its context while it waits for the listing pipelined
// behind its create, and leaves no node behind. Before: it waited for the
// listing whatever ctx said, and returned success after the deadline.
func TestAcquireHonoursContextDuringListing(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	p := zktest.Path(t)
	l := newLock(t, s, p)
	// Make the parents, so that the acquisition below is one create and one
	// listing.
	h, err := l.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	// Hold the listing's write for a while (the whole send loop waits).
	var held atomic.Bool
	zklock.SetWriteHook(s, func(op int32, b []byte) error {
		if zklock.IsListing(op) && bytes.Contains(b, []byte(p)) && held.CompareAndSwap(false, true) {
			time.Sleep(1500 * time.Millisecond)
		}
		return nil
	})
	defer zklock.SetWriteHook(s, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	h, err = l.Acquire(ctx)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || h != nil || took > time.Second {
		t.Fatalf("Acquire = %v, %v after %v, want DeadlineExceeded at about 300ms", h, err, took)
	}
	eventually(t, 10*time.Second, "no node left", func() bool { return len(children(t, s.Conn(), p)) == 0 })
}

// TestListingOvertakesItsCreate: on a connection the session did not dial,
// the listing goes as the create is handed to go-zookeeper, not once it is
// on the wire, which the session cannot see there; where it overtakes the
// create (the writer held, by the hook, until the listing was answered) it
// misses our node, and the acquisition lists again and takes the lock, its
// token a listing's that found our node, not the early one's.
func TestListingOvertakesItsCreate(t *testing.T) {
	for _, try := range []bool{false, true} {
		name := map[bool]string{false: "Acquire", true: "TryAcquire"}[try]
		t.Run(name, func(t *testing.T) { listingOvertakesItsCreate(t, try) })
	}
}

// listingOvertakesItsCreate is TestListingOvertakesItsCreate with Acquire,
// or with TryAcquire of the free lock (try).
func listingOvertakesItsCreate(t *testing.T, try bool) {
	conn := rawConn(t, "")
	s, err := zklock.NewSession(conn, nil, zklock.WithTestHooks(), zklock.WithLogger(quietLog))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The lock path exists: the listing that overtakes the create finds
	// the queue without our node, not zk.ErrNoNode (on a path not made
	// yet it failed, and the acquisition listed again for that reason,
	// never reaching the line this test is named for).
	p := zktest.Path(t)
	if err := zkCreateAll(conn, p); err != nil {
		t.Fatal(err)
	}
	l := newLock(t, s, p)
	ctx := ctxT(t, 20*time.Second)

	listed := make(chan struct{})
	var once, first atomic.Bool
	defer zklock.SetListedBehindHookForTest(func() {
		if once.CompareAndSwap(false, true) {
			close(listed)
		}
	})()
	overtook := false
	defer zklock.SetHandedHookForTest(func() {
		if !first.CompareAndSwap(false, true) {
			return // only the acquisition's create is held
		}
		select {
		case <-listed:
			overtook = true
		case <-time.After(5 * time.Second): // the listing waited for the create
		}
	})()
	var h *zklock.Hold
	if try {
		var ok bool
		h, ok, err = l.TryAcquire(ctx)
		if err == nil && !ok {
			err = errors.New("the free lock found taken")
		}
	} else {
		h, err = l.Acquire(ctx)
	}
	if err != nil {
		t.Fatalf("acquisition with its listing ahead of its create: %v", err)
	}
	defer h.Release()
	if !overtook {
		t.Fatal("the listing was not answered before the create was sent: it waited for the create")
	}
	_, st, err := conn.Exists(h.Node())
	if err != nil {
		t.Fatal(err)
	}
	if h.Token() < st.Czxid {
		t.Errorf("token %d below our node's creation zxid %d: the grant read the listing that missed it", h.Token(), st.Czxid)
	}
}
