package zklock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// Regression tests for the defects of the hostile review (issue 9). Each
// failed on the code before the fix; the comment says how.

// epipe is what go-zookeeper hands a request whose socket write failed: the
// raw *net.OpError, not zk.ErrConnectionClosed.
var epipe = &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}

// failOnce fails the first write of a request with opcode op whose bytes
// contain key.
func failOnce(s *zklock.Session, op int32, key string) *atomic.Bool {
	var fired atomic.Bool
	zklock.SetWriteHook(s, func(o int32, b []byte) error {
		if o == op && bytes.Contains(b, []byte(key)) && fired.CompareAndSwap(false, true) {
			return epipe
		}
		return nil
	})
	return &fired
}

func exists(t *testing.T, conn *zk.Conn, node string) bool {
	t.Helper()
	ok, _, err := conn.Exists(node)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// A release whose delete meets a failed socket write still deletes the
// node once the connection is back. Before: the error was taken as
// permanent, the delete given up, and the node blocked the path for the
// session's life (this test timed out waiting for it to go).
func TestFailedWriteOfDeleteLeavesNoNode(t *testing.T) {
	servers := zktest.Servers(t)
	s := connect(t, servers)
	other := connect(t, servers)
	p := zktest.Path(t)
	l := newLock(t, s, p)
	ctx := ctxT(t, 20*time.Second)
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node := h.Node()
	fired := failOnce(s, zklock.OpDelete, node)
	defer zklock.SetWriteHook(s, nil)
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the released node deleted", func() bool { return !exists(t, other.Conn(), node) })
	if !fired.Load() {
		t.Fatal("the delete's write was not failed")
	}
	// And the path is free for another process.
	ol := newLock(t, other, p)
	if _, ok, err := ol.TryAcquire(ctx); !ok || err != nil {
		t.Fatalf("TryAcquire elsewhere after the release: %v, %v", ok, err)
	}
}

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

// The holder's watch on its own node survives a failed write: a deletion
// by someone else is still noticed. Before: the GetW error made the watch
// goroutine return, and the deletion went unnoticed (Lost never closed).
func TestFailedWriteOfOwnWatchIsRetried(t *testing.T) {
	servers := zktest.Servers(t)
	// The failed write drops the connection; under the default policy that
	// alone ends the hold. Keep the hold through it to see the watch.
	s := connect(t, servers, zklock.WithLossOnExpiryOnly())
	admin := connect(t, servers)
	p := zktest.Path(t)
	l := newLock(t, s, p)
	ctx := ctxT(t, 20*time.Second)
	fired := failOnce(s, zklock.OpGetData, p+"/")
	defer zklock.SetWriteHook(s, nil)
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A hold that is not revocable arms its own-node watch once it has
	// lasted the lease's bound (3/4 of the 4 s session timeout under
	// WithLossOnExpiryOnly), so the failed write comes that much later.
	eventually(t, 10*time.Second, "the own-node watch's write failed", fired.Load)
	// Give the watch time to be set again after the reconnect, then delete.
	eventually(t, 10*time.Second, "the own-node watch set", func() bool { return watchersOf(t, h.Node()) == 1 })
	if err := admin.Conn().Delete(h.Node(), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("deletion of the held node not noticed after the watch's write failed")
	}
	if err := h.Err(); !errors.Is(err, zklock.ErrNodeDeleted) && !errors.Is(err, zklock.ErrDisconnected) {
		t.Fatalf("Err = %v, want ErrNodeDeleted", err)
	}
}

// A waiter whose watch on its predecessor meets a failed write keeps
// waiting and gets the lock. Before: the waiter gave up and Acquire
// returned the *net.OpError.
func TestFailedWriteOfWaiterWatchIsRetried(t *testing.T) {
	servers := zktest.Servers(t)
	hs := connect(t, servers)
	ws := connect(t, servers)
	p := zktest.Path(t)
	holder := newLock(t, hs, p)
	waiter := newLock(t, ws, p)
	ctx := ctxT(t, 20*time.Second)
	hh, err := holder.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fired := failOnce(ws, zklock.OpGetData, p+"/")
	defer zklock.SetWriteHook(ws, nil)
	got := goAcquire(ctx, waiter)
	eventually(t, 5*time.Second, "the waiter's watch write failed", fired.Load)
	eventually(t, 5*time.Second, "the waiter queued", func() bool { return len(children(t, hs.Conn(), p)) == 2 })
	if err := hh.Release(); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("waiter's Acquire after its watch's write failed: %v", r.err)
	}
	if err := r.h.Release(); err != nil {
		t.Fatal(err)
	}
}

// Session state does not depend on go-zookeeper's event channel, which
// drops events once six are unread. Here the user's state listener blocks,
// a burst of watch events fills the channel, and the connection drops:
// the holder must still be told at once. Before: the listener ran on the
// goroutine that read the channel, the disconnection event was dropped,
// and the hold was never ended.
func TestStateSurvivesEventBurstAndSlowListener(t *testing.T) {
	servers := zktest.Servers(t)
	px := proxyTo(t, servers[0])
	release := make(chan struct{})
	var calls atomic.Int32
	s := connect(t, []string{px.Addr()}, zklock.WithStateListener(func(zklock.State) {
		if calls.Add(1) == 1 {
			<-release // a slow listener, on its first call
		}
	}))
	defer close(release)
	admin := connect(t, servers)
	p := zktest.Path(t)
	l := newLock(t, s, p)
	ctx := ctxT(t, 20*time.Second)
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Twenty watch events, and then the drop.
	base := fmt.Sprintf("/tierlock-burst-%d", time.Now().UnixNano())
	if _, err := admin.Conn().Create(base, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Conn().Delete(base, -1) })
	var watches []<-chan zk.Event
	for i := 0; i < 20; i++ {
		n := base + "/" + string(rune('a'+i))
		if _, err := admin.Conn().Create(n, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		_, _, ev, err := s.Conn().GetW(n)
		if err != nil {
			t.Fatal(err)
		}
		watches = append(watches, ev)
	}
	for i := 0; i < 20; i++ {
		if err := admin.Conn().Delete(base+"/"+string(rune('a'+i)), -1); err != nil {
			t.Fatal(err)
		}
	}
	for _, ev := range watches {
		<-ev
	}
	px.DropAll()
	select {
	case <-h.Lost():
	case <-time.After(3 * time.Second):
		t.Fatal("holder not told of the disconnection: its event was dropped")
	}
	if err := h.Err(); !errors.Is(err, zklock.ErrDisconnected) {
		t.Fatalf("Err = %v, want ErrDisconnected", err)
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
		if op == zklock.OpGetChildren2 && bytes.Contains(b, []byte(p)) && held.CompareAndSwap(false, true) {
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

// TryAcquire does not wait for the connection when this session's
// previous node is still to be deleted: it reports the lock as taken.
// Before: it blocked until the connection came back (or ctx ended).
func TestTryAcquireDoesNotWaitForPendingDeleteWhileDisconnected(t *testing.T) {
	servers := zktest.Servers(t)
	px := proxyTo(t, servers[0])
	s := connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(10*time.Second))
	p := zktest.Path(t)
	l := newLock(t, s, p)
	ctx := ctxT(t, 20*time.Second)
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	px.Partition(0)
	defer px.Heal()
	eventually(t, 5*time.Second, "disconnected", func() bool { return s.State() == zklock.StateDisconnected })
	_ = h.Release() // the hold was lost with the connection: ErrLockLost
	start := time.Now()
	_, ok, err := l.TryAcquire(ctx)
	if took := time.Since(start); took > time.Second || ok {
		t.Fatalf("TryAcquire while disconnected = %v, %v after %v; want false at once", ok, err, took)
	}
	px.Heal()
	eventually(t, 10*time.Second, "reconnected", func() bool { return s.State() == zklock.StateConnected })
	eventually(t, 10*time.Second, "old node deleted", func() bool { return len(children(t, s.Conn(), p)) == 0 })
}

// Under NewSession the connection is the caller's and stays open, so Close
// must finish the deletes of released nodes, through a connection loss if
// need be. Before: Close gave them one attempt, and a node whose delete
// failed stayed for the connection's life.
func TestNewSessionCloseFinishesDeletes(t *testing.T) {
	servers := zktest.Servers(t)
	px := proxyTo(t, servers[0])
	conn, events, err := zk.Connect([]string{px.Addr()}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkQuiet{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	eventually(t, 10*time.Second, "connected", func() bool { return conn.State() == zk.StateHasSession })
	s, err := zklock.NewSession(conn, events, zklock.WithSessionTimeout(10*time.Second), zklock.WithLogger(quietLog))
	if err != nil {
		t.Fatal(err)
	}
	admin := connect(t, servers)
	p := zktest.Path(t)
	l, err := zklock.New(s, p)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 30*time.Second)
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node := h.Node()
	px.Partition(0)
	eventually(t, 10*time.Second, "disconnected", func() bool { return conn.State() != zk.StateHasSession })
	_ = h.Release()
	closed := make(chan struct{})
	go func() {
		l.Close()
		s.Close()
		close(closed)
	}()
	time.Sleep(300 * time.Millisecond) // let the delete fail while partitioned
	px.Heal()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return")
	}
	if exists(t, admin.Conn(), node) {
		t.Fatal("released node still there after Close, on a connection that stays open")
	}
}

// zkQuiet silences go-zookeeper's own logger.
type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// A hold acquired through a session wrapped before its connection had a
// session is not spuriously lost.
func TestNewSessionBeforeHasSession(t *testing.T) {
	conn, events, err := zk.Connect(zktest.Servers(t), 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkQuiet{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	s, err := zklock.NewSession(conn, events, zklock.WithLogger(quietLog))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := zklock.New(s, zktest.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := ctxT(t, 20*time.Second)
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Lost():
		t.Fatalf("hold lost at once: %v", h.Err())
	case <-time.After(300 * time.Millisecond):
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
}

// A waiter's periodic re-check does not set a new watch on an unchanged
// predecessor: go-zookeeper keeps every GetW channel until the node
// changes. Before: each re-check sent a GetW (about 17,000 a day per
// waiting lock at the default period, here one per 20 ms).
func TestRecheckKeepsOneWatch(t *testing.T) {
	servers := zktest.Servers(t)
	hs := connect(t, servers)
	ws := connect(t, servers)
	p := zktest.Path(t)
	holder := newLock(t, hs, p)
	waiter := newLock(t, ws, p, zklock.WithRecheckInterval(20*time.Millisecond))
	ctx := ctxT(t, 20*time.Second)
	hh, err := holder.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := zklock.Written(ws, zklock.OpGetData)
	got := goAcquire(ctx, waiter)
	time.Sleep(600 * time.Millisecond) // about 30 re-checks
	gets := zklock.Written(ws, zklock.OpGetData) - before
	if err := hh.Release(); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	if gets > 2 {
		t.Fatalf("%d GetW requests for one unchanged predecessor in 600ms of re-checks", gets)
	}
	if err := r.h.Release(); err != nil {
		t.Fatal(err)
	}
}

// A session wrapped (NewSession) before its connection has a session learns
// of it by polling: a hold granted before the poll catches up must wait
// for it, not be taken for a node of a dead session. Before: install saw
// the session id as 0, gave the node up as gone without deleting it, and
// queued again behind its own orphan: a deadlock until the session ended
// (the interop suite hung so once in TestPairs/zkcompat).
func TestNewSessionGrantBeforeStateCaughtUp(t *testing.T) {
	servers := zktest.Servers(t)
	// A slow poll makes the lag certain; the real one is 5 ms.
	defer zklock.SetPollEvery(300 * time.Millisecond)()
	for round := 0; round < 3; round++ {
		px := proxyTo(t, servers[0])
		px.Pause() // the handshake waits
		conn, _, err := zk.Connect([]string{px.Addr()}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkQuiet{}))
		if err != nil {
			t.Fatal(err)
		}
		s, err := zklock.NewSession(conn, nil, zklock.WithLogger(quietLog))
		if err != nil {
			t.Fatal(err)
		}
		p := zktest.Path(t)
		l, err := zklock.New(s, p)
		if err != nil {
			t.Fatal(err)
		}
		got := goAcquire(ctxT(t, 10*time.Second), l)
		time.Sleep(50 * time.Millisecond) // the create queued behind the handshake
		px.Resume()
		r := <-got
		if r.err != nil {
			t.Fatalf("round %d: Acquire: %v", round, r.err)
		}
		if n := len(children(t, conn, p)); n != 1 {
			t.Fatalf("round %d: %d nodes of one session queued", round, n)
		}
		if err := r.h.Release(); err != nil {
			t.Fatal(err)
		}
		l.Close()
		s.Close()
		conn.Close()
	}
}
