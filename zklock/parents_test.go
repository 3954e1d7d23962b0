package zklock_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// The lock path and its parents vanishing under an acquisition (issue 68,
// item 6): the server reaps an empty container, someone's cleanup deletes
// a parent, or our own making of a parent did not get through. ZooKeeper
// answers our create, or our listing, with zk.ErrNoNode; the acquisition
// makes the parents again and goes on, and only a chroot gone for good
// fails it, saying so. Before: a second zk.ErrNoNode in one acquisition
// failed it with "queue on <path>: zk: node does not exist".

// pathField is p as a request carries it: its length, then its bytes, so
// that a hook tells p from the paths below it.
func pathField(p string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(p))), p...)
}

// holdOnce acquires l, checks that the hold's node is under l's
// path, and releases it.
func holdOnce(t *testing.T, ctx context.Context, l *zklock.Lock) {
	t.Helper()
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if path.Dir(h.Node()) != l.Path() {
		t.Errorf("held node %s, not under %s", h.Node(), l.Path())
	}
	if err := h.Release(); err != nil {
		t.Errorf("Release: %v", err)
	}
}

// The write of the lock path's making fails (the connection drops under
// it), so the create retried after it is refused for the missing parent
// once more: the parents are made again. Before: ensureParents ran once
// per acquisition, and the second refusal failed Acquire with
// "zklock: queue on <path>: zk: node does not exist".
func TestParentsMadeAgainAfterFailedWrite(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	lp := zktest.Path(t) + "/a/x"
	l := newLock(t, s, lp)
	fired := failOnce(s, zklock.OpCreateContainer, string(pathField(lp)))
	defer zklock.SetWriteHook(s, nil)
	holdOnce(t, ctxT(t, 20*time.Second), l)
	if !fired.Load() {
		t.Fatal("the lock path's making was not failed")
	}
}

// A parent vanishes between its making and the making of the path below
// it (an empty container reaped, or deleted by another process's
// cleanup): the acquisition makes the parents again. Before: ensureParents
// returned the second create's zk.ErrNoNode, and Acquire failed with it.
func TestParentGoneWhileMade(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	other := connect(t, zktest.Servers(t))
	base := zktest.Path(t) // missing, as is its parent: made top down
	lp := base + "/a/x"
	l := newLock(t, s, lp)
	var made atomic.Int32
	var deleted atomic.Bool
	zklock.SetWriteHook(s, func(op int32, b []byte) error {
		// The second making of base/a is the one after base was made:
		// base goes first, as the server reaps an emptied container.
		if op == zklock.OpCreateContainer && bytes.Contains(b, pathField(base+"/a")) && made.Add(1) == 2 {
			if err := other.Conn().Delete(base, -1); err != nil {
				t.Errorf("delete %s: %v", base, err)
			}
			deleted.Store(true)
		}
		return nil
	})
	defer zklock.SetWriteHook(s, nil)
	holdOnce(t, ctxT(t, 20*time.Second), l)
	if !deleted.Load() {
		t.Fatal("base was not deleted between its making and base/a's")
	}
}

// Our node and the lock path go (deleted by someone, the path then reaped)
// between our create and the listing pipelined behind it, twice: the
// listing's zk.ErrNoNode says our node went with its parent (a parent is
// not deleted while it has a child), and the acquisition queues again,
// making the parents as often as they are gone. (This one held before
// too: the wait takes a missing lock path for a node gone.)
func TestLockPathGoneBeforeListing(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	other := connect(t, zktest.Servers(t)).Conn()
	lp := zktest.Path(t) + "/x"
	l := newLock(t, s, lp)
	var wiped atomic.Int32
	zklock.SetWriteHook(s, func(op int32, b []byte) error {
		if !zklock.IsListing(op) || !bytes.Contains(b, pathField(lp)) || wiped.Load() == 2 {
			return nil
		}
		// On s's send loop, before the listing goes out: our create went
		// out first, and is applied in a moment.
		switch ok, err := wipe(other, lp); {
		case err != nil:
			t.Errorf("wipe %s: %v", lp, err)
		case ok:
			wiped.Add(1)
		}
		return nil
	})
	defer zklock.SetWriteHook(s, nil)
	holdOnce(t, ctxT(t, 20*time.Second), l)
	if n := wiped.Load(); n != 2 {
		t.Fatalf("lock path wiped %d times, want 2", n)
	}
}

// wipe waits for a node under p (the create sent ahead of the listing),
// then deletes it and p; it reports false when p is gone already.
func wipe(conn *zk.Conn, p string) (bool, error) {
	for range 10000 {
		c, _, err := conn.Children(p)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return false, nil
		case err != nil:
			return false, err
		case len(c) == 0:
			time.Sleep(time.Millisecond)
			continue
		}
		for _, n := range c {
			if err := conn.Delete(p+"/"+n, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return false, err
			}
		}
		return true, conn.Delete(p, -1)
	}
	return false, fmt.Errorf("no node under %s", p)
}

// The session's chroot deleted since Connect: no parent can be made, and
// the acquisition fails at once saying so, with zk.ErrNoNode inside (the
// drop-in's zk.Lock returns it there). Before: "zklock: queue on /x/y: zk:
// node does not exist".
func TestChrootGoneFailsSaying(t *testing.T) {
	chroot, root := newChroot(t)
	s := connect(t, chrooted(t, chroot))
	if err := root.Conn().Delete(chroot, -1); err != nil {
		t.Fatal(err)
	}
	_, err := newLock(t, s, "/x/y").Acquire(ctxT(t, 20*time.Second))
	var we *zklock.WaitError
	if !errors.As(err, &we) || !errors.Is(err, zk.ErrNoNode) || !strings.Contains(err.Error(), "chroot") {
		t.Fatalf("Acquire = %v, want a WaitError saying the chroot is gone, wrapping zk.ErrNoNode", err)
	}
	t.Log(err)
}

// A storm: acquisitions by three sessions, two goroutines each, every
// acquisition on one of six paths under one parent, picked at random, so
// that the paths empty often (a release's delete goes alone when the
// next create is on another path), while a reaper deletes every empty
// container that had a child (as the server's ContainerManager does, here
// at once) and three of one session's writes of parents and nodes
// fail. Every acquisition holds.
func TestParentsReapedStorm(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a storm of acquisitions and a reaper, about 4 s")
	}
	const sessions, workers, iters = 3, 2, 12
	root := zktest.Path(t)
	var paths []string
	for i := range 6 {
		paths = append(paths, fmt.Sprintf("%s/p%d", root, i))
	}
	ctx := ctxT(t, 90*time.Second)
	var ss []*zklock.Session
	for range sessions {
		ss = append(ss, connect(t, zktest.Servers(t)))
	}
	// Three failed writes: each costs go-zookeeper's reconnection.
	var writes, failed atomic.Int32
	zklock.SetWriteHook(ss[0], func(op int32, b []byte) error {
		if (op == zklock.OpCreateContainer || op == zklock.OpCreate) && writes.Add(1)%5 == 0 && failed.Add(1) <= 3 {
			return epipe
		}
		return nil
	})
	defer zklock.SetWriteHook(ss[0], nil)
	stop := make(chan struct{})
	reaped := make(chan int)
	reaper := connect(t, zktest.Servers(t)).Conn()
	go func() { reaped <- reap(reaper, append(paths, root), stop) }()
	var wg sync.WaitGroup
	var acquired atomic.Int32
	for _, s := range ss {
		for range workers {
			var locks []*zklock.Lock
			for _, p := range paths {
				locks = append(locks, newLock(t, s, p))
			}
			wg.Go(func() {
				for range iters {
					l := locks[rand.IntN(len(locks))]
					h, err := l.Acquire(ctx)
					if err != nil {
						t.Errorf("Acquire %s: %v", l.Path(), err)
						return
					}
					acquired.Add(1)
					if err := h.Release(); err != nil && !errors.Is(err, zklock.ErrLockLost) {
						t.Errorf("Release %s: %v", l.Path(), err)
					}
				}
			})
		}
	}
	zktest.Wait(t, "the acquirers", &wg)
	close(stop)
	t.Logf("%d acquisitions, %d failed writes, %d containers reaped", acquired.Load(), min(failed.Load(), 3), <-reaped)
	for _, p := range paths {
		eventually(t, 20*time.Second, "no node left on "+p, func() bool { return len(children(t, ss[1].Conn(), p)) == 0 })
	}
}

// reap deletes each of paths whenever it is empty and has had a child,
// until stop is closed, and returns how many it deleted. The delete fails
// on a path that has a child again (zk.ErrNotEmpty), as the server's does.
func reap(conn *zk.Conn, paths []string, stop <-chan struct{}) int {
	n := 0
	for {
		select {
		case <-stop:
			return n
		default:
		}
		for _, p := range paths {
			ok, st, err := conn.Exists(p)
			if err == nil && ok && st.NumChildren == 0 && st.Cversion > 0 && conn.Delete(p, -1) == nil {
				n++
			}
		}
		time.Sleep(time.Millisecond)
	}
}

// A Lock on a path that does not exist yet makes it, then creates its node
// again at once, as zk.Lock does: without a retry's pause. Before, the
// create went back to the retries' backoff (10 ms and up) after making the
// parents: a zk.Lock user's first Lock of a new path through the drop-in
// took 14 ms at the median against zk.Lock's 3.3 (an uncontended loop of
// 1,400 new paths on one connection).
func TestMissingPathMadeWithoutPause(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	var mu sync.Mutex
	var pauses []error
	defer zklock.SetRetryPauseHook(func(err error) {
		if !strings.Contains(err.Error(), "lock path created") {
			return // another session's retry, left by an earlier test: not this one's to judge
		}
		mu.Lock()
		pauses = append(pauses, err)
		mu.Unlock()
	})()
	holdOnce(t, zktest.Context(t, 10*time.Second), newLock(t, s, zktest.Path(t)+"/a/b/lock"))
	mu.Lock()
	defer mu.Unlock()
	if len(pauses) > 0 {
		t.Errorf("the acquisition paused %d times, for %v; want none: the parents made, the create goes again at once", len(pauses), pauses)
	}
}
