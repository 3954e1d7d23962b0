package tier_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// Close racing a grant (issue 29, item 1): Close runs after ZooKeeper
// granted the node and before the hold is published. Close finds no hold
// to cancel and gives the node up; the grant must then not publish a live
// hold. Before the fix (tier.Lock checked closed only before the grant),
// Acquire returned a held context that was never cancelled while another
// process could take the lock: two holders. The hooks stand in the window
// deterministically; TestCloseStormTwoProcesses races the same without them.

// awaitFree waits until another session can take path, i.e. no node of
// ours is left on it.
func awaitFree(t *testing.T, obs *zklock.Session, path string) {
	t.Helper()
	eventually(t, 5*time.Second, "no node left on "+path, func() bool { return len(children(t, obs.Conn(), path)) == 0 })
}

// wantClosedNotHeld fails unless an acquisition that Close raced returned
// ErrClosed and no held context.
func wantClosedNotHeld(t *testing.T, what string, held context.Context, err error) {
	t.Helper()
	if errors.Is(err, tier.ErrClosed) && held == nil {
		return
	}
	live := held != nil && held.Err() == nil
	t.Fatalf("%s: err %v, held context live %v; want ErrClosed and no hold", what, err, live)
}

func TestCloseRacingGrantLock(t *testing.T) {
	servers := zktest.Servers(t)
	s, obs := connect(t, servers), connect(t, servers)
	p := zktest.Path(t)
	l := newLock(t, s, p)
	tier.SetPublishHookForTest(func(*zklock.Hold) { _ = l.Close() })
	defer tier.SetPublishHookForTest(nil)
	held, err := l.Acquire(ctxT(t, 10*time.Second))
	tier.SetPublishHookForTest(nil)
	wantClosedNotHeld(t, "Lock.Acquire with Close between grant and publication", held, err)
	awaitFree(t, obs, p)
}

// Close racing an ask for the node (found by TestCloseStormTwoProcesses
// under loaded run 39: "path 0: zklock: lock closed"): Close lands once
// the gate let Acquire in and the lock was found open, before zklock is
// asked for the node. zklock refuses, closed, and Acquire returned that
// refusal bare: zklock's ErrClosed, which tier.ErrClosed does not match.
// It is a wait our Close ended, as any other: ErrClosed, told in tier 1.
func TestCloseRacingNodeAsk(t *testing.T) {
	servers := zktest.Servers(t)
	s, obs := connect(t, servers), connect(t, servers)
	for _, tc := range []struct {
		name string
		take func(*tier.Lock, context.Context) (context.Context, error)
	}{
		{"Lock.Acquire", (*tier.Lock).Acquire},
		{"Lock.TryAcquire", func(l *tier.Lock, ctx context.Context) (context.Context, error) {
			held, _, err := l.TryAcquire(ctx)
			return held, err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := zktest.Path(t)
			l := newLock(t, s, p)
			tier.SetAskingNodeHookForTest(func(*tier.Lock) { _ = l.Close() })
			defer tier.SetAskingNodeHookForTest(nil)
			held, err := tc.take(l, ctxT(t, 10*time.Second))
			tier.SetAskingNodeHookForTest(nil)
			wantClosedNotHeld(t, tc.name+" with Close before the node is asked", held, err)
			if !strings.HasPrefix(err.Error(), "tier: ") || strings.Contains(err.Error(), "zklock") {
				t.Errorf("%q, want this package's error", err)
			}
			awaitFree(t, obs, p)
		})
	}
}

// Close racing a Release (found by TestCloseStormTwoProcesses under a
// loaded make test: "release: tier: context does not hold this lock"):
// Close takes the hold out between Release's last count and its own take.
// The hold was the caller's and Close ended it: Release says ErrClosed, as
// after Close, not ErrNotHolder, which says the context held nothing.
func TestCloseRacingRelease(t *testing.T) {
	servers := zktest.Servers(t)
	s, obs := connect(t, servers), connect(t, servers)
	p := zktest.Path(t)
	l := newLock(t, s, p)
	held, err := l.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	tier.SetReleasingHookForTest(func(*tier.Lock) { _ = l.Close() })
	defer tier.SetReleasingHookForTest(nil)
	err = l.Release(held)
	tier.SetReleasingHookForTest(nil)
	if !errors.Is(err, tier.ErrClosed) {
		t.Fatalf("Release with Close taking the hold first: %v, want ErrClosed", err)
	}
	if held.Err() == nil {
		t.Fatal("the held context outlived Close")
	}
	awaitFree(t, obs, p)
}

func TestCloseRacingGrantRWLock(t *testing.T) {
	servers := zktest.Servers(t)
	s, obs := connect(t, servers), connect(t, servers)
	for _, tc := range []struct {
		name string
		take func(rw *tier.RWLock, ctx context.Context) (context.Context, error)
	}{
		{"writer", (*tier.RWLock).Lock},
		{"reader", (*tier.RWLock).RLock},
		{"read under write", func(rw *tier.RWLock, ctx context.Context) (context.Context, error) {
			w, err := rw.Lock(ctx)
			if err != nil {
				return nil, err
			}
			tier.SetRWPublishHookForTest(func(rw *tier.RWLock) { _ = rw.Close() })
			return rw.RLock(w)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := zktest.Path(t)
			rw, err := tier.NewRWLock(s, p)
			if err != nil {
				t.Fatal(err)
			}
			defer rw.Close()
			if tc.name != "read under write" {
				tier.SetRWPublishHookForTest(func(rw *tier.RWLock) { _ = rw.Close() })
			}
			defer tier.SetRWPublishHookForTest(nil)
			held, err := tc.take(rw, ctxT(t, 10*time.Second))
			tier.SetRWPublishHookForTest(nil)
			wantClosedNotHeld(t, tc.name+" with Close between grant and publication", held, err)
			awaitFree(t, obs, p)
		})
	}
}

// Issue 21, item 3: Close ends an Acquire already queued on ZooKeeper, at
// once, with tier.ErrClosed, and leaves no node.
func TestCloseEndsQueuedAcquire(t *testing.T) {
	servers := zktest.Servers(t)
	a, b := connect(t, servers), connect(t, servers)
	obs := connect(t, servers)
	kinds := []struct {
		name    string
		hold    func(ctx context.Context, path string) func() // A holds; returns the release
		acquire func(ctx context.Context, path string) (closer func() error, wait func() error)
	}{
		{"Lock", func(ctx context.Context, path string) func() {
			l := newLock(t, a, path)
			h, err := l.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return func() { _ = l.Release(h) }
		}, func(ctx context.Context, path string) (func() error, func() error) {
			l := newLock(t, b, path)
			return l.Close, func() error { _, err := l.Acquire(ctx); return err }
		}},
		{"Registry", func(ctx context.Context, path string) func() {
			l := newLock(t, a, path+"/k")
			h, err := l.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return func() { _ = l.Release(h) }
		}, func(ctx context.Context, path string) (func() error, func() error) {
			r, err := tier.NewRegistry(b, path)
			if err != nil {
				t.Fatal(err)
			}
			return r.Close, func() error { _, err := r.Acquire(ctx, "k"); return err }
		}},
		{"RWLock", func(ctx context.Context, path string) func() {
			rw := newRW(t, a, path)
			h, err := rw.Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return func() { _ = rw.Release(h) }
		}, func(ctx context.Context, path string) (func() error, func() error) {
			rw := newRW(t, b, path)
			return rw.Close, func() error { _, err := rw.RLock(ctx); return err }
		}},
		{"Semaphore", func(ctx context.Context, path string) func() {
			sem := newSem(t, a, path, 1)
			h, err := sem.Acquire(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			return func() { _ = sem.Release(h) }
		}, func(ctx context.Context, path string) (func() error, func() error) {
			sem := newSem(t, b, path, 1)
			return sem.Close, func() error { _, err := sem.Acquire(ctx, 1); return err }
		}},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			ctx := ctxT(t, 30*time.Second)
			path := zktest.Path(t)
			release := k.hold(ctx, path)
			defer release()
			qpath := path
			switch k.name {
			case "Registry":
				qpath = path + "/k"
			case "Semaphore":
				qpath = path + "/leases"
			}
			closer, wait := k.acquire(ctx, path)
			done := make(chan error, 1)
			go func() { done <- wait() }()
			zktest.Eventually(t, 10*time.Second, "B queued", func() bool { return len(children(t, obs.Conn(), qpath)) == 2 })
			closedAt := time.Now()
			_ = closer()
			select {
			case err := <-done:
				if !errors.Is(err, tier.ErrClosed) {
					t.Errorf("queued Acquire ended by Close with %v; want tier.ErrClosed", err)
				}
				t.Logf("queued Acquire ended %v after Close: %v", time.Since(closedAt).Round(time.Millisecond), err)
			case <-time.After(2 * time.Second):
				t.Errorf("queued Acquire still waiting 2s after Close")
				release()
				<-done
			}
			zktest.Eventually(t, 5*time.Second, "B's node gone", func() bool { return len(children(t, obs.Conn(), qpath)) == 1 })
		})
	}
}

// Issue 21, item 8: Close racing an Acquire between its closed check and
// the publication of its hold must not leave a hold that Close never saw:
// the held context would never be cancelled and the lease never given up.
func TestSemaphoreCloseRacingAcquire(t *testing.T) {
	servers := zktest.Servers(t)
	s, obs := connect(t, servers), connect(t, servers)
	path := zktest.Path(t)
	sem := newSem(t, s, path, 2)
	tier.SetSemPublishHookForTest(func(sem *tier.Semaphore) { _ = sem.Close() })
	defer tier.SetSemPublishHookForTest(nil)
	ctx := ctxT(t, 10*time.Second)
	held, err := sem.Acquire(ctx, 1)
	tier.SetSemPublishHookForTest(nil)
	if err == nil {
		select {
		case <-held.Done():
		case <-time.After(2 * time.Second):
			t.Errorf("a hold that Close raced is not cancelled 2s later")
		}
	} else if !errors.Is(err, tier.ErrClosed) {
		t.Errorf("Acquire racing Close: %v; want success then cancellation, or ErrClosed", err)
	}
	zktest.Eventually(t, 5*time.Second, "the lease given up", func() bool {
		return len(children(t, obs.Conn(), path+"/leases")) == 0
	})
}
