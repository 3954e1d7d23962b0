package zkcompat_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zkcompat"
)

// Processes on zk.Lock and processes on the drop-in, on one path, take
// turns (as far as ZooKeeper can tell, each connection is a process): the
// drop-in's Curator-style names are what zk.Lock parses, and it parses
// zk.Lock's. The multi-process version with an independent checker is
// interop.TestDropInBesideZkLock.
func TestBesideZkLock(t *testing.T) {
	p := zktest.Path(t)
	var mu sync.Mutex
	inside, holds := 0, 0
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	worker := func(lock func() error, unlock func() error) {
		defer wg.Done()
		for range 10 {
			if err := lock(); err != nil {
				errs <- err
				return
			}
			mu.Lock()
			inside++
			holds++
			if inside != 1 {
				errs <- errors.New("zk.Lock and the drop-in held the lock at once")
			}
			mu.Unlock()
			time.Sleep(500 * time.Microsecond)
			mu.Lock()
			inside--
			mu.Unlock()
			if err := unlock(); err != nil {
				errs <- err
				return
			}
		}
	}
	for range 2 {
		gc, dc := conn(t), conn(t)
		for range 3 {
			g := zk.NewLock(gc, p, acl)
			d := zkcompat.NewLock(dc, p, acl)
			wg.Add(2)
			go worker(g.Lock, g.Unlock)
			go worker(d.Lock, d.Unlock)
		}
	}
	if _, ok := zktest.Await(t, "the workers' holds", zktest.Waited(&wg)); !ok {
		t.FailNow()
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if holds != 120 {
		t.Fatalf("%d holds, want 120", holds)
	}
}
