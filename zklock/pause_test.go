package zklock_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// An acquisition paused past its session's life between its create's
// answer and the read of the node's owner (a GC or scheduling pause; the
// model's OWNER_AFTER_REPLY) must not take the node, which the expiry
// deleted, for one of the new session. Before the fix the owner read as
// the new session, the listing taken before the pause said "first", the
// new session's sync renewed the lease, and Acquire returned a hold while
// another process held the lock.
func TestPauseBetweenCreateAndOwner(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a paused connection, about 6 s")
	}
	servers := zktest.Servers(t)
	px := proxyTo(t, servers[0])
	s := connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(2*time.Second))
	other := connect(t, servers)
	obs := other.Conn()
	ctx := ctxT(t, 60*time.Second)
	p := zktest.Path(t)
	l, ol := newLock(t, s, p), newLock(t, other, p)
	warm, err := l.Acquire(ctx) // the path made, the session proved
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Release(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the warm-up node gone", func() bool { return len(children(t, obs, p)) == 0 })

	var fired atomic.Bool      // once, for our create only (the other's passes by)
	var otherHold *zklock.Hold // written by the hook, read after hooked closes
	hooked := make(chan struct{})
	listings := zklock.Listings(s)
	// until polls cond, on the hook's goroutine (not the test's: no Fatal).
	until := func(what string, cond func() bool) bool {
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			if cond() {
				return true
			}
		}
		t.Errorf("hook: no %s", what)
		return false
	}
	zklock.SetCreatedHookForTest(func() {
		if !fired.CompareAndSwap(false, true) {
			return
		}
		func() {
			defer close(hooked)
			old := s.SessionID()
			// The listing was written behind the create: let its answer in.
			if !until("listing written", func() bool { return zklock.Listings(s) > listings }) {
				return
			}
			time.Sleep(100 * time.Millisecond)
			px.Partition(0)
			if !until("expiry", func() bool { k, _, err := obs.Children(p); return err == nil && len(k) == 0 }) {
				return
			}
			var err error
			if otherHold, err = ol.Acquire(ctx); err != nil {
				t.Error(err)
			}
			px.Heal()
			until("new session", func() bool { id := s.SessionID(); return id != 0 && id != old })
		}()
	})
	defer zklock.SetCreatedHookForTest(nil)
	got := goAcquire(ctx, l)
	select {
	case <-hooked:
	case <-ctx.Done():
		t.Fatal("the create's hook did not finish")
	}
	if t.Failed() {
		t.FailNow()
	}
	select {
	case r := <-got:
		zklock.SetCreatedHookForTest(nil)
		if r.err == nil {
			t.Fatalf("Acquire returned a hold on %s while another process holds the lock (its node %s)", r.h.Node(), otherHold.Node())
		}
		t.Fatalf("Acquire: %v", r.err)
	case <-time.After(2 * time.Second):
		// Still waiting, as it must while the other process holds.
	}
	zklock.SetCreatedHookForTest(nil)
	if otherHold == nil {
		t.Fatal("the other process did not acquire")
	}
	if err := otherHold.Release(); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.h.Token() <= otherHold.Token() {
		t.Errorf("token %d after the other's %d", r.h.Token(), otherHold.Token())
	}
	if err := r.h.Release(); err != nil {
		t.Fatal(err)
	}
}
