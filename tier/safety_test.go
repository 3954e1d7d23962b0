package tier_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
)

// Issue 21, item 2: one process's overlapping readers must not starve a
// writer of another process. Four goroutines of A read in a loop, 20 ms
// each, staggered so that A always has a reader in; B's writer queues and
// must be granted once the readers that were in when it queued are done,
// not after A stops reading.
func TestRWWriterNotStarvedByOverlappingReaders(t *testing.T) {
	servers := zktest.Servers(t)
	a, b := connect(t, servers), connect(t, servers)
	path := zktest.Path(t)
	ra, rb := newRW(t, a, path), newRW(t, b, path)
	ctx := ctxT(t, 30*time.Second)
	stop := make(chan struct{})
	var reads atomic.Int64
	var readers sync.WaitGroup
	for i := range 4 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			time.Sleep(time.Duration(i) * 5 * time.Millisecond)
			for {
				select {
				case <-stop:
					return
				default:
				}
				h, err := ra.RLock(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				reads.Add(1)
				time.Sleep(20 * time.Millisecond)
				if err := ra.Release(h); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	defer func() { close(stop); readers.Wait() }()
	zktest.Eventually(t, 5*time.Second, "A reading", func() bool { return reads.Load() > 10 })
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start, before := time.Now(), reads.Load()
	h, err := rb.Lock(wctx)
	if err != nil {
		t.Fatalf("B's writer starved: %v after %v, while A made %d reads", err, time.Since(start).Round(time.Millisecond), reads.Load()-before)
	}
	waited, during := time.Since(start), reads.Load()-before
	if err := rb.Release(h); err != nil {
		t.Fatal(err)
	}
	t.Logf("B's writer granted after %v; A made %d reads meanwhile", waited.Round(time.Millisecond), during)
	// The readers in when B queued hold 20 ms; a few more may have been
	// admitted before B's node was seen. Dozens mean A kept the read node.
	if during > 20 {
		t.Errorf("A made %d reads while B's writer waited %v: readers kept riding the read node", during, waited)
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

// Issue 21, item 9: a downgrade whose new read node is lost between its
// grant and the move of the readers onto it must tell those readers.
func TestRWDowngradeReadNodeLostBeforeRewire(t *testing.T) {
	servers := zktest.Servers(t)
	s, admin := connect(t, servers), connect(t, servers)
	path := zktest.Path(t)
	rw := newRW(t, s, path)
	ctx := ctxT(t, 10*time.Second)
	w, err := rw.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rw.RLock(w)
	if err != nil {
		t.Fatal(err)
	}
	tier.SetDowngradeHookForTest(func(node string) {
		// Someone deletes the new read node, and its hold is found lost,
		// before the readers move onto it.
		if err := admin.Conn().Delete(node, -1); err != nil {
			t.Error(err)
		}
		time.Sleep(500 * time.Millisecond)
	})
	defer tier.SetDowngradeHookForTest(nil)
	if err := rw.Release(w); err != nil {
		t.Fatal(err)
	}
	tier.SetDowngradeHookForTest(nil)
	select {
	case <-r.Done():
		if !errors.Is(context.Cause(r), tier.ErrLockLost) {
			t.Errorf("reader's cause %v; want ErrLockLost", context.Cause(r))
		}
	case <-time.After(3 * time.Second):
		t.Errorf("the reader riding the lost read node was not told (queue %v)", children(t, admin.Conn(), path))
	}
	_ = rw.Release(r)
}

// Issue 21, item 4: a registry key too large for the server is refused
// before anything is sent, and the session's other holds live on.
func TestRegistryOversizedKeyRefused(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	ctx := ctxT(t, 20*time.Second)
	other := newLock(t, s, zktest.Path(t)+"/other")
	held, err := other.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := tier.NewRegistry(s, zktest.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Acquire(ctx, strings.Repeat("k", 1100<<10)); !errors.Is(err, tier.ErrInvalidPath) {
		t.Errorf("a 1.1 MB key: %v; want ErrInvalidPath", err)
	}
	if held.Err() != nil {
		t.Errorf("the session's other hold was lost: %v", context.Cause(held))
	}
	if err := other.Release(held); err != nil {
		t.Error(err)
	}
}

// A hand-off whose receiver's wait ends as it is granted: the receiver
// gives the gate back (the admission undoes the grant) after the giver has
// returned, with the node still the process's and nobody to release it.
// The node must go all the same, or every other process waits on it.
func TestHandoffToWaiterGivingUp(t *testing.T) {
	servers := zktest.Servers(t)
	s, obs := connect(t, servers), connect(t, servers)
	path := zktest.Path(t)
	l := newLock(t, s, path, tier.WithHandoff(10, time.Minute))
	ctx := ctxT(t, 20*time.Second)
	held, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		h, err := l.Acquire(wctx)
		if err == nil {
			_ = l.Release(h)
		}
		done <- err
	}()
	eventually(t, 5*time.Second, "a waiter at the gate", func() bool { return tier.GateWaiters(l) == 1 })
	// The waiter's context ends; before it looks whether it was granted,
	// the holder releases and hands the hold (gate and node) to it.
	tier.SetGateGaveUpHookForTest(l, func() {
		if err := l.Release(held); err != nil {
			t.Error(err)
		}
	})
	defer tier.SetGateGaveUpHookForTest(l, nil)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the waiter: %v; want its context's end", err)
	}
	eventually(t, 5*time.Second, "the node given up", func() bool { return len(children(t, obs.Conn(), path)) == 0 })
}
