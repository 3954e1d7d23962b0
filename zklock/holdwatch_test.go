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

// The hold's own-node watch as one of the session's own (holdwatch.go,
// issue 72): the reads of holds that come of age together leave together,
// as the waiters' do, against the real server.

// TestHoldWatchesGoTogether: n holds of one session, on n keys, arm their
// own-node watches together (a quarter of the session timeout after their
// grants): the reads leave as one setWatches and one multiRead, no getData
// (before: n GetW, one getData each); each watch then tells its hold an
// operator's deletion of its node.
func TestHoldWatchesGoTogether(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: holds coming of age together, about 3 s")
	}
	servers := zktest.Servers(t)
	// The holds' watches arm 3 s after their grants: the n acquisitions
	// end well before, so the first read finds the sender held below.
	s := connect(t, servers, zklock.WithSessionTimeout(12*time.Second))
	admin := connect(t, servers)
	ctx := ctxT(t, time.Minute)
	base := zktest.Path(t)
	const n = 8
	var armed atomic.Bool // not before: the acquisitions' listings go at once
	queued, remove := holdSender(s, n, armed.Load)
	defer remove()
	holds := make([]*zklock.Hold, n)
	for i := range holds {
		var err error
		if holds[i], err = newLock(t, s, fmt.Sprintf("%s/k-%d", base, i)).Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		defer holds[i].Release()
	}
	written := func() [3]int64 {
		return [3]int64{zklock.Written(s, zklock.OpSetWatches), zklock.Written(s, zklock.OpMultiRead), zklock.Written(s, zklock.OpGetData)}
	}
	before := written()
	armed.Store(true)
	select {
	case ok := <-queued:
		if !ok {
			t.Fatalf("the %d holds' reads did not all queue behind the held sender", n)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no read of the %d holds' queued with the session's (each its own GetW?)", n)
	}
	for _, h := range holds {
		eventually(t, 20*time.Second, "the hold's node watched", func() bool { return watchersOf(t, h.Node()) == 1 })
	}
	if got := written(); [3]int64{got[0] - before[0], got[1] - before[1], got[2] - before[2]} != [3]int64{1, 1, 0} {
		t.Errorf("%d holds' watches went as %d setWatches, %d multiRead and %d getData requests, want 1, 1 and 0",
			n, got[0]-before[0], got[1]-before[1], got[2]-before[2])
	}
	for _, h := range holds {
		if err := admin.Conn().Delete(h.Node(), -1); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range holds {
		select {
		case <-h.Lost():
		case <-ctx.Done():
			t.Fatalf("the deletion of %s not told to its hold", h.Node())
		}
		if err := h.Err(); !errors.Is(err, zklock.ErrNodeDeleted) {
			t.Errorf("%s: Err = %v, want ErrNodeDeleted", h.Node(), err)
		}
	}
}

// TestHoldWatchSetAgainOnANewConnection: the hold's own-node watch, set by
// the session itself, lives on its connection; when the session's next
// connection is made, the hold reads and watches its node again, and so
// still hears an operator's deletion. Without the hold's answer to the
// session event (onOwnEvent), the node went unwatched on the new
// connection and the deletion was never told. (SetOwnAlone: a lone read
// would go as GetW, which go-zookeeper sets again itself;
// WithLossOnExpiryOnly: the hold outlives the dropped connection.)
func TestHoldWatchSetAgainOnANewConnection(t *testing.T) {
	defer zklock.SetOwnAlone()()
	servers := zktest.Servers(t)
	var k socket
	s := connect(t, servers, zklock.WithDialer(k.dial), zklock.WithLossOnExpiryOnly())
	admin := connect(t, servers)
	ctx := ctxT(t, time.Minute)
	sets := zklock.Written(s, zklock.OpSetWatches)
	h, err := newLock(t, s, zktest.Path(t), zklock.WithNodeWatch()).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	watched := func() bool { return watchersOf(t, h.Node()) == 1 }
	eventually(t, 10*time.Second, "the hold's watch set by the session", func() bool {
		return zklock.Written(s, zklock.OpSetWatches) > sets && watched()
	})
	k.mu.Lock()
	conns := k.conns
	k.mu.Unlock()
	k.fail.Store(true) // the next write fails: go-zookeeper makes a new connection
	go func() { _, _, _ = s.Conn().Exists(h.Node()) }()
	eventually(t, 20*time.Second, "a new connection with the session", func() bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		return k.conns > conns && s.Conn().State() == zk.StateHasSession
	})
	eventually(t, 20*time.Second, "the hold's watch set on it", watched)
	if zktest.IsClosed(h.Lost()) {
		t.Fatalf("the hold ended with its connection: %v", h.Err())
	}
	if err := admin.Conn().Delete(h.Node(), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Lost():
	case <-time.After(20 * time.Second):
		t.Fatal("the deletion of the held node not told after a new connection")
	}
	if err := h.Err(); !errors.Is(err, zklock.ErrNodeDeleted) {
		t.Fatalf("Err = %v, want ErrNodeDeleted", err)
	}
}
