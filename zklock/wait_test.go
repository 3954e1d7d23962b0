package zklock_test

import (
	"bytes"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// The wait for our turn (wait.go): the watch on the predecessor, the
// re-check, a failed request while waiting.

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
	ctx := ctxT(t, 40*time.Second)
	hh, err := holder.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fired := failOnce(ws, zklock.OpGetData, p+"/")
	defer zklock.SetWriteHook(ws, nil)
	got := goAcquire(ctx, waiter)
	// Through a reconnection (the failed write closes the connection):
	// 15 s each, where a loaded make test's race run once took more than 5.
	eventually(t, 15*time.Second, "the waiter's watch write failed", fired.Load)
	eventually(t, 15*time.Second, "the waiter queued", func() bool { return len(children(t, hs.Conn(), p)) == 2 })
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

// After a watch it could not set, the waiter reads the queue again before
// it watches anew, as twotier.pml's wait does ("goto list"), rather than
// deciding again on the listing from before the failure. Before: the next
// request after the failed GetW was another GetW. Both ways of setting
// the watch (IsWatch): a lone waiter's GetW, and the session's own
// setWatches with its read in a multiRead after it.
func TestFailedWatchListsAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a failed watch and a reconnection, about 3 s")
	}
	t.Run("GetW", func(t *testing.T) { failedWatchListsAgain(t) })
	t.Run("own", func(t *testing.T) {
		defer zklock.SetOwnAlone()()
		failedWatchListsAgain(t)
	})
}

func failedWatchListsAgain(t *testing.T) {
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
	var mu sync.Mutex
	var ops []int32 // the waiter's reads of the queue and watches, from the failed watch on
	var failed bool
	zklock.SetWriteHook(ws, func(op int32, b []byte) error {
		if !zklock.IsWatch(op) && !zklock.IsListing(op) {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if zklock.IsWatch(op) && bytes.Contains(b, []byte(p+"/")) && !failed {
			failed = true
			return errors.New("test: the watch's write fails")
		}
		if failed {
			ops = append(ops, op)
		}
		return nil
	})
	defer zklock.SetWriteHook(ws, nil)
	got := goAcquire(ctx, waiter)
	eventually(t, 10*time.Second, "the watch set again after its failed write", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.ContainsFunc(ops, zklock.IsWatch)
	})
	mu.Lock()
	first := ops[0]
	mu.Unlock()
	if !zklock.IsListing(first) {
		t.Errorf("after the failed watch the waiter sent opcode %d first, want a listing (%d or %d)", first, zklock.OpGetChildren2, zklock.OpMultiRead)
	}
	if err := hh.Release(); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	if err := r.h.Release(); err != nil {
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
	before := zklock.WatchRequests(ws)
	got := goAcquire(ctx, waiter)
	time.Sleep(600 * time.Millisecond) // about 30 re-checks
	gets := zklock.WatchRequests(ws) - before
	if err := hh.Release(); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	if gets > 2 {
		t.Fatalf("%d watch requests for one unchanged predecessor in 600ms of re-checks", gets)
	}
	if err := r.h.Release(); err != nil {
		t.Fatal(err)
	}
}
