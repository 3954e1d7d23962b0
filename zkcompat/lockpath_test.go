package zkcompat_test

import (
	"bytes"
	"errors"
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zkcompat"
)

// Issue 55, item 6: zk.Lock creates the lock path as a persistent node, and
// code that keeps data on it (a key-value store's ZooKeeper backend writes
// each lock's value into the lock path's node) finds it there after Unlock.
// The drop-in created the lock path as a container, which the server
// deleted, data and all, once its last child was gone. Beside each other on
// a server whose container check runs every second: each locks its own
// path (the parent exists), writes a value into the lock path, unlocks;
// once the server's container checks have passed over them (see below),
// both lock paths are still there, not ephemeral, with the value. (A
// client cannot tell a container by its Stat, whose ephemeralOwner the
// server shows as 0: only its deletion shows it.)
func TestLockPathKeptAsZkLockKeepsIt(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a private ensemble, about 2 s")
	}
	zc := zktest.Ensemble(t, 1, zkserver.WithContainerCheck(time.Second))
	admin := connTo(t, zc.Addrs(), 4*time.Second)
	root := zktest.Path(t)
	for _, p := range []string{path.Dir(path.Dir(root)), path.Dir(root), root} {
		if _, err := admin.Create(p, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	value := []byte("the key's value")
	type locker interface {
		Lock() error
		Unlock() error
	}
	lockPaths := map[string]string{}
	for name, newLock := range map[string]func(c *zk.Conn, p string) locker{
		"zk.Lock": func(c *zk.Conn, p string) locker { return zk.NewLock(c, p, acl) },
		"drop-in": func(c *zk.Conn, p string) locker { return zkcompat.NewLock(c, p, acl) },
	} {
		c, p := connTo(t, zc.Addrs(), 4*time.Second), root+"/"+path.Base(name)
		l := newLock(c, p)
		if err := l.Lock(); err != nil {
			t.Fatalf("%s: Lock: %v", name, err)
		}
		if _, err := c.Set(p, value, -1); err != nil {
			t.Fatalf("%s: the value written into the lock path: %v", name, err)
		}
		if err := l.Unlock(); err != nil {
			t.Fatalf("%s: Unlock: %v", name, err)
		}
		lockPaths[name] = p
	}
	// A container emptied now is reaped in the pass that reaps the lock
	// paths (emptied before it) or a later one; one emptied after that is
	// reaped in a later pass still, which starts once that pass is over
	// (the server runs them one after another): after it, every pass that
	// could have deleted a lock path has ended.
	reapedContainer(t, admin, root+"/probe1")
	reapedContainer(t, admin, root+"/probe2")
	for name, p := range lockPaths {
		data, st, err := admin.Get(p)
		switch {
		case err != nil:
			t.Errorf("%s: the lock path %s after Unlock and a container check: %v", name, p, err)
		case st.EphemeralOwner != 0:
			t.Errorf("%s: the lock path is an ephemeral node (owner %#x)", name, st.EphemeralOwner)
		case !bytes.Equal(data, value):
			t.Errorf("%s: the lock path's data is %q, want %q", name, data, value)
		}
	}
}

// reapedContainer makes a container at p with a child, deletes the child,
// and waits until the server has reaped the container.
func reapedContainer(t *testing.T, c *zk.Conn, p string) {
	t.Helper()
	if _, err := c.CreateContainer(p, nil, zk.FlagContainer, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(p+"/x", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(p+"/x", -1); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 30*time.Second, "the server reaping the emptied container "+p, func() bool {
		ok, _, err := c.Exists(p)
		return err == nil && !ok
	})
}
