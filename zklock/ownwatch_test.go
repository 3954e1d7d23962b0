package zklock_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// The session's own watches (issue 72): a waiter's read of its
// predecessor goes with the session's other reads, its watch set by one
// setWatches for them all (session.Floor.Watch), against the real server.

// TestWatchesGoTogether: reads with a watch queued together leave as one
// setWatches and one multiRead, no getData of their own; each returns the
// node's data and stat, as GetW would; the server then holds a watch of
// the session on every node, and each fires the callback registered
// before it: a change of the data, a deletion. A node already gone is
// zk.ErrNoNode, and its callback fires at once (setWatches' NodeDeleted).
func TestWatchesGoTogether(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	other := connect(t, zktest.Servers(t))
	ctx := ctxT(t, time.Minute)
	base := zktest.Path(t)
	if err := zkCreateAll(other.Conn(), base); err != nil {
		t.Fatal(err)
	}
	const n = 16
	nodes := make([]string, n+1)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("%s/n-%d", base, i)
		if _, err := other.Conn().Create(nodes[i], []byte(nodes[i]), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	gone := nodes[n]
	if err := other.Conn().Delete(gone, -1); err != nil {
		t.Fatal(err)
	}
	queued, remove := holdSender(s, n+1, nil)
	defer remove()
	sets, reads, gets := zklock.Written(s, zklock.OpSetWatches), zklock.Written(s, zklock.OpMultiRead), zklock.Written(s, zklock.OpGetData)
	events := make(chan zk.Event, 2*(n+1))
	errs := make(chan error, n+1)
	for _, node := range nodes {
		go func() {
			data, st, unwatch, err := zklock.WatchNode(ctx, s, node, func(ev zk.Event) { events <- ev })
			t.Cleanup(unwatch)
			switch {
			case node == gone && !errors.Is(err, zk.ErrNoNode):
				err = fmt.Errorf("the read of a node gone: %v, want zk.ErrNoNode", err)
			case node == gone:
				err = nil
			case err == nil && (!bytes.Equal(data, []byte(node)) || st == nil || st.Czxid == 0):
				err = fmt.Errorf("%s read as %q, stat %+v", node, data, st)
			}
			errs <- err
		}()
	}
	for range n + 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if !<-queued {
		t.Fatalf("the %d reads did not all queue behind the held sender", n+1)
	}
	if got := [3]int64{zklock.Written(s, zklock.OpSetWatches) - sets, zklock.Written(s, zklock.OpMultiRead) - reads, zklock.Written(s, zklock.OpGetData) - gets}; got != [3]int64{1, 1, 0} {
		t.Errorf("%d reads with a watch went as %d setWatches, %d multiRead and %d getData requests, want 1, 1 and 0", n+1, got[0], got[1], got[2])
	}
	if ev := <-events; ev.Type != zk.EventNodeDeleted || ev.Path != gone {
		t.Errorf("first event %+v, want the deletion of %s, told as its watch was set", ev, gone)
	}
	for _, node := range nodes[:n] {
		if w := watchersOf(t, node); w != 1 {
			t.Fatalf("%s watched by %d sessions on the server, want 1", node, w)
		}
	}
	if _, err := other.Conn().Set(nodes[0], []byte("changed"), -1); err != nil {
		t.Fatal(err)
	}
	for _, node := range nodes[1:n] {
		if err := other.Conn().Delete(node, -1); err != nil {
			t.Fatal(err)
		}
	}
	fired := map[string]zk.EventType{}
	for len(fired) < n {
		select {
		case ev := <-events:
			fired[ev.Path] = ev.Type
		case <-ctx.Done():
			t.Fatalf("%d of %d watches fired: %v", len(fired), n, fired)
		}
	}
	if fired[nodes[0]] != zk.EventNodeDataChanged || fired[nodes[1]] != zk.EventNodeDeleted {
		t.Errorf("events %v, want %s's data changed and the others deleted", fired, nodes[0])
	}
}

// holdSender holds the first of s's lister senders to start once on()
// (nil: from now on) until n requests wait to be sent, so that they go
// together, and tells on queued whether they did (in 30 s).
func holdSender(s *zklock.Session, n int, on func() bool) (queued <-chan bool, remove func()) {
	var once sync.Once
	ch := make(chan bool, 1)
	remove = zklock.SetListSenderHook(func() {
		if on != nil && !on() {
			return
		}
		once.Do(func() {
			deadline := time.Now().Add(30 * time.Second)
			for zklock.ListingsWaiting(s) < n && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			ch <- zklock.ListingsWaiting(s) == n
		})
	})
	return ch, remove
}

// TestReadsPerBatchBounded: a batch carries at most 32 node reads (the
// lister's bound, MaxReply/2 over the request limit: a node's data may be
// as large as a request, and the answer must stay within what the tap
// reads whole), so 40 reads queued together leave as two setWatches and
// two multiReads; each is answered. Without the bound they went as one.
func TestReadsPerBatchBounded(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	ctx := ctxT(t, time.Minute)
	base := zktest.Path(t)
	if err := zkCreateAll(s.Conn(), base); err != nil {
		t.Fatal(err)
	}
	const n = 40
	nodes := make([]string, n)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("%s/n-%d", base, i)
		if _, err := s.Conn().Create(nodes[i], nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	queued, remove := holdSender(s, n, nil)
	defer remove()
	sets, reads := zklock.Written(s, zklock.OpSetWatches), zklock.Written(s, zklock.OpMultiRead)
	errs := make(chan error, n)
	for _, node := range nodes {
		go func() {
			_, _, unwatch, err := zklock.WatchNode(ctx, s, node, func(zk.Event) {})
			t.Cleanup(unwatch)
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if !<-queued {
		t.Fatalf("the %d reads did not all queue behind the held sender", n)
	}
	if got := [2]int64{zklock.Written(s, zklock.OpSetWatches) - sets, zklock.Written(s, zklock.OpMultiRead) - reads}; got != [2]int64{2, 2} {
		t.Errorf("%d reads went as %d setWatches and %d multiRead requests, want 2 and 2 (32 reads a batch)", n, got[0], got[1])
	}
}

// TestWaiterWatchesWithoutGetData: waiters behind another session's
// holders are woken by their own watches (the re-check an hour away),
// and their session wrote no getData for them (SetOwnAlone: a waiter
// whose read finds no other in its batch would go as GetW).
func TestWaiterWatchesWithoutGetData(t *testing.T) {
	defer zklock.SetOwnAlone()()
	a, b := connect(t, zktest.Servers(t)), connect(t, zktest.Servers(t))
	ctx := ctxT(t, time.Minute)
	base := zktest.Path(t)
	const n = 8
	holds := make([]*zklock.Hold, n)
	waits := make(chan error, n)
	var behind sync.WaitGroup
	behind.Add(n)
	gets, sets := zklock.Written(b, zklock.OpGetData), zklock.Written(b, zklock.OpSetWatches)
	for i := range holds {
		p := fmt.Sprintf("%s/k-%d", base, i)
		var err error
		if holds[i], err = newLock(t, a, p).Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		var told sync.Once
		l := newLock(t, b, p, zklock.WithRecheckInterval(time.Hour), zklock.WithPositionHandler(func(pos zklock.Position) {
			if pos.Ahead == 1 {
				told.Do(behind.Done)
			}
		}))
		go func() {
			h, err := l.Acquire(ctx)
			if err == nil {
				err = h.Release()
			}
			waits <- err
		}()
	}
	behind.Wait()
	eventually(t, 10*time.Second, "the waiters' watches set", func() bool {
		return zklock.Written(b, zklock.OpSetWatches) > sets
	})
	for _, h := range holds {
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		if err := <-waits; err != nil {
			t.Fatal(err)
		}
	}
	if got := zklock.Written(b, zklock.OpGetData) - gets; got != 0 {
		t.Errorf("the waiters' session wrote %d getData requests, want none", got)
	}
}

// TestOwnWatchSetAgainOnANewConnection: a watch the session set itself
// lives on its connection (the server drops a closed connection's
// watches; go-zookeeper sets again only its own). A waiter whose
// connection is replaced reads again when the new one is made, and so is
// woken when its predecessor goes after it, the re-check an hour away. On
// the code before Watches.connected, the waiter slept past the test's
// minute. (SetOwnAlone: a lone waiter's watch would be GetW's, which
// go-zookeeper sets again itself.)
func TestOwnWatchSetAgainOnANewConnection(t *testing.T) {
	defer zklock.SetOwnAlone()()
	a := connect(t, zktest.Servers(t))
	var k socket
	b := connect(t, zktest.Servers(t), zklock.WithDialer(k.dial))
	ctx := ctxT(t, time.Minute)
	p := zktest.Path(t)
	h, err := newLock(t, a, p).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	behind := make(chan struct{})
	var told sync.Once
	l := newLock(t, b, p, zklock.WithRecheckInterval(time.Hour), zklock.WithPositionHandler(func(pos zklock.Position) {
		if pos.Ahead == 1 {
			told.Do(func() { close(behind) })
		}
	}))
	sets := zklock.Written(b, zklock.OpSetWatches)
	got := make(chan error, 1)
	go func() {
		h, err := l.Acquire(ctx)
		if err == nil {
			err = h.Release()
		}
		got <- err
	}()
	<-behind
	watching := func() bool { return watchesBySession(t, p)[b.SessionID()] == 1 }
	eventually(t, 10*time.Second, "the waiter's watch set", func() bool {
		return zklock.Written(b, zklock.OpSetWatches) > sets && watching()
	})
	k.mu.Lock()
	conns := k.conns
	k.mu.Unlock()
	k.fail.Store(true) // the next write fails: go-zookeeper makes a new connection
	go func() { _, _, _ = b.Conn().Exists(p) }()
	eventually(t, 20*time.Second, "a new connection with the session", func() bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		return k.conns > conns && b.Conn().State() == zk.StateHasSession
	})
	eventually(t, 20*time.Second, "the waiter's watch set on it", watching)
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiter: %v", err)
	}
}

// TestLoneWatchIsOneRequest: a read with a watch that finds no other in
// its batch (a lone waiter, few keys) goes as go-zookeeper's GetW, one
// request where setWatches and a multiRead are two; its event reaches the
// callback all the same. Before: one path at 4 × 8 took 5.02 requests per
// acquisition against 4.03 (docs/bench/issue72-own-watches.md).
func TestLoneWatchIsOneRequest(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	ctx := ctxT(t, time.Minute)
	p := zktest.Path(t)
	if err := zkCreateAll(s.Conn(), p); err != nil {
		t.Fatal(err)
	}
	before := [3]int64{zklock.Written(s, zklock.OpGetData), zklock.Written(s, zklock.OpSetWatches), zklock.Written(s, zklock.OpMultiRead)}
	fired := make(chan zk.Event, 1)
	_, st, unwatch, err := zklock.WatchNode(ctx, s, p, func(ev zk.Event) { fired <- ev })
	defer unwatch()
	if err != nil || st == nil {
		t.Fatalf("the read: %v, %v", st, err)
	}
	got := [3]int64{zklock.Written(s, zklock.OpGetData) - before[0], zklock.Written(s, zklock.OpSetWatches) - before[1], zklock.Written(s, zklock.OpMultiRead) - before[2]}
	if got != [3]int64{1, 0, 0} {
		t.Errorf("a lone read with a watch went as %d getData, %d setWatches and %d multiRead requests, want 1, 0, 0", got[0], got[1], got[2])
	}
	if err := s.Conn().Delete(p, -1); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-fired:
		if ev.Type != zk.EventNodeDeleted {
			t.Errorf("event %+v, want the deletion", ev)
		}
	case <-ctx.Done():
		t.Fatal("the watch did not fire")
	}
}
