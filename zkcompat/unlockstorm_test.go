package zkcompat_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zkcompat"
)

// Issue 43, items 3 to 5, the storm: Unlock waits for its node's delete,
// which the shared lock's writer reports from its own goroutine, matched
// to the handle by node. Twelve handles on two paths lock with random
// deadlines while another client deletes a holder's node now and then:
// every Unlock returns (none waits for a report that never comes), nil or
// zk.ErrNoNode when its node was deleted by the other client, nothing
// else; and once they are done the drop-in waits for no report
// (the routing forgets every node it was told of).
func TestUnlockStorm(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a storm of unlocks, about 2 s")
	}
	pending, restore := zkcompat.TrackDeletesForTest()
	defer restore()
	c, admin := conn(t), conn(t)
	paths := []string{zktest.Path(t) + "/a", zktest.Path(t) + "/b"}
	for _, p := range paths {
		createParents(t, c, p+"/x")
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var holds, deleted, timedOut int
	errs := make(chan error, 64)
	for g := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 43))
			l := zkcompat.NewLock(c, paths[g%2], acl)
			for range 40 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(60))*time.Millisecond)
				err := l.LockContext(ctx)
				cancel()
				if err != nil {
					if !errors.Is(err, context.DeadlineExceeded) {
						errs <- err
						return
					}
					mu.Lock()
					timedOut++
					mu.Unlock()
					continue
				}
				gone := rng.IntN(8) == 0
				if gone {
					for _, k := range zktest.Children(t, admin, paths[g%2]) {
						_ = admin.Delete(paths[g%2]+"/"+k, -1) // ours: the process has one node there
					}
				}
				done := make(chan error, 1)
				go func() { done <- l.Unlock() }()
				select {
				case err = <-done:
				case <-time.After(10 * time.Second):
					errs <- errors.New("Unlock still waiting after 10s")
					return
				}
				switch {
				case err == nil:
				case gone && err == zk.ErrNoNode:
				default:
					errs <- err
					return
				}
				mu.Lock()
				holds++
				if gone {
					deleted++
				}
				mu.Unlock()
			}
		}()
	}
	if _, ok := zktest.Await(t, "the storm's goroutines", zktest.Waited(&wg)); !ok {
		t.FailNow()
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d holds (%d nodes deleted by another client), %d waits timed out", holds, deleted, timedOut)
	if n := pending(); n != 0 {
		t.Errorf("every handle unlocked, and the drop-in waits for %d deletes", n)
	}
}
