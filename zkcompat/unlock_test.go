package zkcompat_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zkcompat"
)

// locker is what zk.Lock and the drop-in have in common.
type locker interface {
	Lock() error
	Unlock() error
}

// impls are the two, side by side: zk.Lock first, as the reference.
var impls = []struct {
	name    string
	newLock func(c *zk.Conn, p string) locker
}{
	{"zk.Lock", func(c *zk.Conn, p string) locker { return zk.NewLock(c, p, acl) }},
	{"zkcompat", func(c *zk.Conn, p string) locker { return zkcompat.NewLock(c, p, acl) }},
}

// createParents creates p's ancestors, persistent, if missing.
func createParents(t testing.TB, c *zk.Conn, p string) {
	t.Helper()
	if d := path.Dir(p); d != "/" {
		createParents(t, c, d)
		if _, err := c.Create(d, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
}

// Issue 31, seam 2: go-zookeeper's TestIntegration_MultiLevelLock, ported
// and run 20 times: create a parent, lock and unlock a lock below it, then
// delete the lock's path and the parent. Unlock returns once its node is
// deleted, so neither delete meets zk.ErrNotEmpty. Unlock's latencies are
// logged, the drop-in's beside zk.Lock's.
func TestUnlockThenDeletePath(t *testing.T) {
	const runs = 20
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			c := conn(t)
			base := zktest.Path(t)
			createParents(t, c, base+"/x")
			var took []time.Duration
			failed := 0
			for i := range runs {
				parent := fmt.Sprintf("%s/test-multi-level-%d", base, i)
				if _, err := c.Create(parent, []byte{1, 2, 3, 4}, 0, acl); err != nil {
					t.Fatal(err)
				}
				l := im.newLock(c, parent+"/lock")
				if err := l.Lock(); err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				if err := l.Unlock(); err != nil {
					t.Fatal(err)
				}
				took = append(took, time.Since(start))
				if err := c.Delete(parent+"/lock", -1); err != nil {
					failed++
					t.Errorf("run %d: delete of the lock's path after Unlock: %v", i, err)
					zktest.Eventually(t, 10*time.Second, "the node deleted", func() bool {
						return len(zktest.Children(t, c, parent+"/lock")) == 0
					})
					if err := c.Delete(parent+"/lock", -1); err != nil {
						t.Fatal(err)
					}
				}
				if err := c.Delete(parent, -1); err != nil {
					t.Fatalf("run %d: delete of the parent: %v", i, err)
				}
			}
			slices.Sort(took)
			t.Logf("%s: Unlock took median %v, min %v, max %v over %d runs; %d of %d deletes of the lock's path failed",
				im.name, took[runs/2], took[0], took[runs-1], runs, failed, runs)
		})
	}
}

// Issue 31, seam 2: an Unlock whose delete is refused (an administrator
// took DELETE away on the lock's path) says so, as zk.Lock's does, with the
// server's error. The drop-in's handle is unlocked all the same, and the
// background delete still runs: once DELETE is given back the node goes.
// zk.Lock's handle stays locked instead, for Unlock to be called again.
func TestUnlockReportsFailedDelete(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			c, admin := conn(t), conn(t)
			p := zktest.Path(t)
			l := im.newLock(c, p)
			if err := l.Lock(); err != nil {
				t.Fatal(err)
			}
			if _, err := admin.SetACL(p, zk.WorldACL(zk.PermAll&^zk.PermDelete), -1); err != nil {
				t.Fatal(err)
			}
			// Should the test fail with the node still there, DELETE is
			// given back before CloseConn, which waits for the delete.
			t.Cleanup(func() { _, _ = admin.SetACL(p, acl, -1) })
			err := l.Unlock()
			if err != zk.ErrNoAuth {
				t.Fatalf("Unlock whose delete is refused = %v, want zk.ErrNoAuth itself", err)
			}
			t.Logf("%s: Unlock whose delete is refused: %v", im.name, err)
			if kids := zktest.Children(t, admin, p); len(kids) != 1 {
				t.Fatalf("nodes after the refused delete: %v, want the lock's", kids)
			}
			if _, err := admin.SetACL(p, acl, -1); err != nil {
				t.Fatal(err)
			}
			if im.name == "zk.Lock" {
				if err := l.Unlock(); err != nil {
					t.Fatalf("zk.Lock's second Unlock: %v", err)
				}
			} else if err := l.Unlock(); !errors.Is(err, zk.ErrNotLocked) {
				t.Fatalf("second Unlock = %v, want zk.ErrNotLocked", err)
			}
			zktest.Eventually(t, 15*time.Second, "the node deleted", func() bool {
				return len(zktest.Children(t, admin, p)) == 0
			})
			if err := l.Lock(); err != nil {
				t.Fatal(err)
			}
			if err := l.Unlock(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Issue 37, item 2: a node deleted by someone else while held (an
// operator, say) is a lost lock, and zk.Lock's Unlock says so with
// zk.ErrNoNode. The drop-in's Unlock said nil: the shared lock's release
// sent its own delete before Unlock's, so Unlock's zk.ErrNoNode could not
// tell "the release's delete came first" from "deleted by another", and
// was taken for the first. Since issue 43 Unlock sends no delete of its
// own: it waits for the release's, the only one, whose zk.ErrNoNode is the
// loss, reported as zk.Lock reports it (and as tier.ErrLockLost). Five
// rounds each, the hold younger than the own-node watch's delay, so that
// nothing but Unlock can tell.
func TestUnlockReportsNodeDeletedByAnother(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			c, admin := conn(t), conn(t)
			p := zktest.Path(t)
			for round := range 5 {
				l := im.newLock(c, p)
				if err := l.Lock(); err != nil {
					t.Fatal(err)
				}
				kids := zktest.Children(t, admin, p)
				if len(kids) != 1 {
					t.Fatalf("round %d: queue %v, want our node alone", round, kids)
				}
				if err := admin.Delete(p+"/"+kids[0], -1); err != nil {
					t.Fatal(err)
				}
				if err := l.Unlock(); err != zk.ErrNoNode {
					t.Fatalf("round %d: Unlock of a node deleted by another = %v, want zk.ErrNoNode itself", round, err)
				}
			}
		})
	}
}

// Issue 43, item 3: a hold that has lasted the lease's bound (a quarter of
// the session timeout) watches its own node, so that a deletion by someone
// else ends it. The drop-in's Unlock deleted the node itself before it
// released the shared lock, which fired that watch: a clean Unlock
// returned tier.ErrLockLost, Lost closed, and zklock logged "lock lost"
// (as often as the watch's event beat the release). The test's hook holds
// Unlock right before the release until a loss that what Unlock did so far
// caused has been seen (when the node is gone by then), so that the race
// goes the bad way every time. Three rounds; zk.Lock's Unlock returns nil.
func TestUnlockOfOldHold(t *testing.T) {
	var logs zktest.SyncBuffer
	zkcompat.SetLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	defer zkcompat.SetLogger(zktest.QuietLog)
	const timeout = 2 * time.Second // the own-node watch is armed after 500 ms
	c, admin := connTo(t, zktest.Servers(t), timeout), conn(t)
	p := zktest.Path(t)
	defer zkcompat.SetBeforeReleaseHookForTest(func(held context.Context) {
		if len(zktest.Children(t, admin, p)) > 0 {
			return // the node is still there: nothing to wait for
		}
		select {
		case <-held.Done():
		case <-time.After(5 * time.Second):
		}
	})()
	l := zkcompat.NewLock(c, p, acl)
	for round := range 3 {
		if err := l.Lock(); err != nil {
			t.Fatal(err)
		}
		lost := l.Lost()
		zktest.Eventually(t, 3*timeout, "the hold's own-node watch set", func() bool {
			return zktest.WatchesBySession(t, p+"/")[c.SessionID()] > 0
		})
		if err := l.Unlock(); err != nil {
			t.Errorf("round %d: Unlock of a hold that watched its node = %v, want nil", round, err)
		}
		if zktest.IsClosed(lost) {
			t.Errorf("round %d: Lost closed by Unlock", round)
		}
	}
	if strings.Contains(logs.String(), "lock lost") {
		t.Errorf("clean Unlocks logged a loss:\n%s", logs.String())
	}
}

// Issue 43: Unlock waits for its node's delete, which the session sends
// only on a connection. With the connection gone (here: a partition, with
// the hold lost first, as the default policy has it), Unlock does not wait
// for the connection to come back, as zk.Lock's fails a delete
// go-zookeeper cannot send: it returns at once, saying the connection was
// lost (zk.ErrConnectionClosed) and the hold lost; once the connection is
// back, in the same session, the delete goes and the node is gone.
func TestUnlockConnectionLost(t *testing.T) {
	px, err := faultproxy.New(zktest.Servers(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	c, admin := connTo(t, []string{px.Addr()}, 4*time.Second), conn(t)
	p := zktest.Path(t)
	l := zkcompat.NewLock(c, p, acl)
	if err := l.Lock(); err != nil {
		t.Fatal(err)
	}
	sid := c.SessionID()
	px.Partition(time.Hour)
	select {
	case <-l.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the hold not lost after the partition")
	}
	start := time.Now()
	err = l.Unlock()
	took := time.Since(start)
	t.Logf("Unlock with the connection gone: %v after %v", err, took)
	if err != zk.ErrConnectionClosed {
		t.Errorf("Unlock with the connection gone = %v, want zk.ErrConnectionClosed itself", err)
	}
	if took > time.Second {
		t.Errorf("Unlock with the connection gone took %v", took)
	}
	px.Heal()
	zktest.Eventually(t, 10*time.Second, "the node deleted once the connection is back", func() bool {
		return len(zktest.Children(t, admin, p)) == 0
	})
	if c.SessionID() != sid {
		t.Log("the session was not kept: the node went with it")
	}
	if err := l.Lock(); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
}
