package zklock_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// deleteReports records what a lock's delete handler was told.
type deleteReports struct {
	mu   sync.Mutex
	got  map[string][]error
	told chan string
}

func newDeleteReports() *deleteReports {
	return &deleteReports{got: map[string][]error{}, told: make(chan string, 16)}
}

func (r *deleteReports) handler(node string, err error) {
	r.mu.Lock()
	r.got[node] = append(r.got[node], err)
	r.mu.Unlock()
	r.told <- node
}

// await waits for the report of node's delete and returns it, failing the
// test unless it comes, once.
func (r *deleteReports) await(t *testing.T, node string) error {
	t.Helper()
	select {
	case n := <-r.told:
		if n != node {
			t.Fatalf("delete reported for %s, want %s", n, node)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no delete reported for %s", node)
	}
	time.Sleep(50 * time.Millisecond) // a second report would come by now
	r.mu.Lock()
	defer r.mu.Unlock()
	if errs := r.got[node]; len(errs) != 1 {
		t.Fatalf("%d reports for %s: %v, want one", len(errs), node, errs)
	}
	return r.got[node][0]
}

// WithDeleteHandler (issue 43: what zkcompat's Unlock awaits) tells each
// hold's node's delete once, with its outcome: nil once the server
// deleted the node (it is gone by then); zk.ErrNoNode when it was gone
// already; the server's refusal (the delete then goes on in the
// background); ErrSessionClosed, or nil, when the session's Close ends
// the hold.
func TestDeleteHandler(t *testing.T) {
	servers := zktest.Servers(t)
	s, admin := connect(t, servers), connect(t, servers)
	r := newDeleteReports()
	acquire := func(t *testing.T, p string) *zklock.Hold {
		t.Helper()
		h, err := newLock(t, s, p, zklock.WithDeleteHandler(r.handler)).Acquire(ctxT(t, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}

	t.Run("released", func(t *testing.T) {
		h := acquire(t, zktest.Path(t))
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
		if err := r.await(t, h.Node()); err != nil {
			t.Fatalf("delete of a released node: %v, want nil", err)
		}
		if ok, _, err := admin.Conn().Exists(h.Node()); err != nil || ok {
			t.Fatalf("the node once its delete was reported: exists %v (%v)", ok, err)
		}
	})

	t.Run("deleted by another", func(t *testing.T) {
		h := acquire(t, zktest.Path(t))
		if err := admin.Conn().Delete(h.Node(), -1); err != nil {
			t.Fatal(err)
		}
		_ = h.Release() // lost or not, as the own-node watch may have seen
		if err := r.await(t, h.Node()); !errors.Is(err, zk.ErrNoNode) {
			t.Fatalf("delete of a node deleted by another: %v, want zk.ErrNoNode", err)
		}
	})

	t.Run("refused", func(t *testing.T) {
		p := zktest.Path(t)
		h := acquire(t, p)
		if _, err := admin.Conn().SetACL(p, zk.WorldACL(zk.PermAll&^zk.PermDelete), -1); err != nil {
			t.Fatal(err)
		}
		defer func() { _, _ = admin.Conn().SetACL(p, zk.WorldACL(zk.PermAll), -1) }()
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
		if err := r.await(t, h.Node()); !errors.Is(err, zk.ErrNoAuth) {
			t.Fatalf("delete refused: %v, want zk.ErrNoAuth", err)
		}
		if _, err := admin.Conn().SetACL(p, zk.WorldACL(zk.PermAll), -1); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "the node deleted in the background", func() bool {
			return len(children(t, admin.Conn(), p)) == 0
		})
	})

	t.Run("session closed", func(t *testing.T) {
		s2 := connect(t, servers)
		h, err := newLock(t, s2, zktest.Path(t), zklock.WithDeleteHandler(r.handler)).Acquire(ctxT(t, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if err := s2.Close(); err != nil {
			t.Fatal(err)
		}
		if err := r.await(t, h.Node()); err != nil && !errors.Is(err, zklock.ErrSessionClosed) {
			t.Fatalf("delete of a hold ended by the session's Close: %v, want nil or ErrSessionClosed", err)
		}
	})
}
