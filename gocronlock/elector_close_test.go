package gocronlock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlock/tierlock/gocronlock"
	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// handlerLog records a leader handler's calls.
type handlerLog struct {
	mu    sync.Mutex
	calls []bool
}

func (h *handlerLog) add(leading bool) {
	h.mu.Lock()
	h.calls = append(h.calls, leading)
	h.mu.Unlock()
}

func (h *handlerLog) get() []bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]bool(nil), h.calls...)
}

// closeWithin runs Close and fails the test if it has not returned after d.
func closeWithin(t *testing.T, e *gocronlock.Elector, d time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- e.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(d):
		t.Fatalf("Close still waits after %v", d)
	}
}

// TestElectorCloseFromHandler (issue 37, item 4): a leader handler that
// closes the Elector, when leading starts and when it ends, does not hang
// Close nor any other Close caller; after Close the handler is called at
// most once more, with false, and only if its last call was true.
func TestElectorCloseFromHandler(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "leading", false: "not leading"}[on], func(t *testing.T) { closeFromHandler(t, on) })
	}
}

// closeFromHandler is TestElectorCloseFromHandler's case: the handler
// closes the Elector when it is called with on.
func closeFromHandler(t *testing.T, on bool) {
	servers := zktest.Servers(t)
	path := zktest.Path(t)
	var e *gocronlock.Elector
	ready := make(chan struct{})
	returned := make(chan struct{}) // Close returned in the handler
	var log handlerLog
	e, err := gocronlock.NewElector(zktest.Connect(t, servers), path, gocronlock.WithLeaderHandler(func(leading bool) {
		log.add(leading)
		if leading == on {
			<-ready
			if err := e.Close(); err != nil {
				t.Errorf("Close from the handler: %v", err)
			}
			close(returned)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	close(ready)
	ctx := zktest.Context(t, 20*time.Second)
	zktest.Eventually(t, 5*time.Second, "leading", func() bool { return len(log.get()) > 0 })
	if !on {
		// End the leadership behind its back: an operator's delete.
		operator := zktest.Connect(t, servers)
		ps, err := zklock.ListParticipants(ctx, operator, path)
		if err != nil || len(ps) != 1 {
			t.Fatalf("participants %v, %v", ps, err)
		}
		if err := operator.Conn().Delete(path+"/"+ps[0].Node, -1); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("Close called from the handler has not returned")
	}
	closeWithin(t, e, 5*time.Second)
	zktest.Eventually(t, 5*time.Second, "the handler told of the end", func() bool {
		c := log.get()
		return len(c) > 0 && !c[len(c)-1]
	})
	time.Sleep(100 * time.Millisecond)
	if c := log.get(); len(c) != 2 || !c[0] || c[1] {
		t.Errorf("handler calls %v, want [true false]", c)
	}
	if err := e.IsLeader(ctx); err == nil {
		t.Error("IsLeader after Close is nil")
	}
}

// TestElectorConcurrentClose: Close from many goroutines at once, one of
// them the handler, while the Elector leads: every call returns.
func TestElectorConcurrentClose(t *testing.T) {
	var e *gocronlock.Elector
	ready := make(chan struct{})
	var wg sync.WaitGroup
	e, err := gocronlock.NewElector(zktest.Connect(t, zktest.Servers(t)), zktest.Path(t),
		gocronlock.WithLeaderHandler(func(leading bool) {
			if leading {
				<-ready
				e.Close()
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 5*time.Second, "leading", func() bool { return e.IsLeader(context.Background()) == nil })
	for range 8 {
		wg.Go(func() { closeWithin(t, e, 10*time.Second) })
	}
	close(ready)
	zktest.Wait(t, "the concurrent Closes", &wg)
}

// TestElectorCloseStorm (issue 37, item 4): instances whose leader
// handlers close their Elector (when they start leading, or when they
// stop) and whose sessions' state listeners close their session on a
// disconnection, while they campaign, lose their leadership to an
// operator deleting the leader's node, hand it over on Close, and have
// their connections cut. Nothing hangs: every Close returns, from the
// callbacks and from here; goleak (TestMain) finds nothing left running.
//
// A cut is a partition of the instance's own proxy that refuses the
// reconnection too: go-zookeeper v1.0.4 races with itself when a session
// with watches reconnects (sendSetWatches reads lastZxid while recvLoop
// writes it), which the race detector would report against this test.
func TestElectorCloseStorm(t *testing.T) {
	servers := zktest.Servers(t)
	path := zktest.Path(t)
	ctx := zktest.Context(t, 60*time.Second)
	operator := zktest.Connect(t, servers)
	stop := make(chan struct{})
	var faults sync.WaitGroup
	faults.Go(func() { operatorBreaks(ctx, operator, path, stop) })
	var all []*stormInstance
	var c stormCounts
	for i := 0; i < 40; i++ {
		in := newStormInstance(t, ctx, servers[0], path, i, &c)
		all = append(all, in)
		if i%3 == 2 && i > 2 {
			all[i-3].px.Partition(0) // an earlier instance's connection, cut
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	zktest.Wait(t, "the operator's faults", &faults)
	var closers sync.WaitGroup
	for _, in := range all {
		closers.Go(func() {
			closeWithin(t, in.e, 10*time.Second)
			in.s.Close()
		})
	}
	zktest.Wait(t, "the closers", &closers)
	t.Logf("closed from a handler on leading %d times, on its end %d, from a listener %d", c.leading.Load(), c.end.Load(), c.listener.Load())
	if c.leading.Load() == 0 || c.end.Load() == 0 || c.listener.Load() == 0 {
		t.Error("a kind of callback never closed: the storm did not test it")
	}
}

// operatorBreaks deletes the leader's node every 40 ms until stop: losses.
func operatorBreaks(ctx context.Context, operator *zklock.Session, path string, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(40 * time.Millisecond):
		}
		if ps, err := zklock.ListParticipants(ctx, operator, path); err == nil && len(ps) > 0 {
			_ = operator.Conn().Delete(path+"/"+ps[0].Node, -1)
		}
	}
}

// stormInstance is an instance of TestElectorCloseStorm: its session on
// a proxy of its own, and its Elector.
type stormInstance struct {
	s  *zklock.Session
	e  *gocronlock.Elector
	px *faultproxy.Proxy
}

// stormCounts counts the Closes from each kind of callback.
type stormCounts struct{ leading, end, listener atomic.Int32 }

// newStormInstance makes the i-th instance: its handler closes its Elector
// when it starts leading (i%3 == 0) or stops (i%3 == 1), its state
// listener its session on a disconnection.
func newStormInstance(t *testing.T, ctx context.Context, server, path string, i int, c *stormCounts) *stormInstance {
	t.Helper()
	in := &stormInstance{}
	px, err := faultproxy.New(server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	in.px = px
	ready := make(chan struct{})
	listener := zklock.WithStateListener(func(st zklock.State) {
		if st == zklock.StateDisconnected {
			<-ready
			c.listener.Add(1)
			in.s.Close()
		}
	})
	s, err := zklock.Connect(ctx, []string{px.Addr()}, listener, zklock.WithLogger(zktest.QuietLog), zklock.WithSessionTimeout(4*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	in.s = s
	in.e, err = gocronlock.NewElector(s, path, gocronlock.WithRetryInterval(20*time.Millisecond),
		gocronlock.WithLeaderHandler(func(leading bool) {
			<-ready
			switch {
			case i%3 == 0 && leading:
				c.leading.Add(1)
				in.e.Close()
			case i%3 == 1 && !leading:
				c.end.Add(1)
				in.e.Close()
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	close(ready)
	return in
}
