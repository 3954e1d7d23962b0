package zklock_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// The session's state (state.go): events, listeners, grants against a
// state that lags.

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
		s, err := zklock.NewSession(conn, nil, zklock.WithTestHooks(), zklock.WithLogger(quietLog))
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

// A state listener that closes its session when the connection drops, as
// a program that stops on loss does (issue 37, item 4). Close waited for
// the listener's goroutine, which was the one calling it: Close never
// returned, and every other Close then hung on the first. Now Close does
// not wait for a listener call in progress; the listener is still told
// StateClosed, last, and nothing is left running (goleak).
func TestCloseFromStateListener(t *testing.T) {
	servers := zktest.Servers(t)
	px := proxyTo(t, servers[0])
	var s *zklock.Session
	ready := make(chan struct{})
	closed := make(chan error, 1)
	var states []zklock.State
	var last atomic.Int32
	s = connect(t, []string{px.Addr()}, zklock.WithStateListener(func(st zklock.State) {
		<-ready
		states = append(states, st) // only this goroutine calls the listener
		last.Store(int32(st))
		if st == zklock.StateDisconnected {
			closed <- s.Close()
		}
	}))
	close(ready)
	eventually(t, 5*time.Second, "told connected", func() bool { return zklock.State(last.Load()) == zklock.StateConnected })
	px.DropAll()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close from the listener: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close called from the state listener has not returned")
	}
	done := make(chan struct{})
	go func() {
		_ = s.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a second Close hangs behind the listener's")
	}
	eventually(t, 5*time.Second, "told closed", func() bool { return zklock.State(last.Load()) == zklock.StateClosed })
}
