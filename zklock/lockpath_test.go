package zklock_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// The lock path a lock creates is a container, and so are its missing
// parents: the server deletes them once the last lock node is gone. Under
// WithPersistentPath (package zkcompat's, as go-zookeeper's zk.Lock makes
// it) the lock path is a persistent node, which the server keeps; its
// parents are containers still, kept while it is there. A client cannot
// tell a container by its Stat (the server shows its ephemeralOwner as 0),
// so the test watches the server's container checks, which a server of
// its own runs every second, one after another: the first check to start
// after the releases deletes the default lock path, the next its parent.
// Three containers, each emptied once the one before was reaped, are
// reaped in three checks at least: once the third is gone, the check that
// deleted the parent is over.
func TestPersistentPath(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a private ensemble, about 3 s")
	}
	zc := zktest.Ensemble(t, 1, zkserver.WithContainerCheck(time.Second))
	s := connect(t, zc.Addrs())
	conn := s.Conn()
	ctx := ctxT(t, 30*time.Second)
	lock := func(p string, opts ...zklock.Option) {
		h, err := newLock(t, s, p, opts...).Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
	}
	lock("/default/lock")
	lock("/persistent/lock", zklock.WithPersistentPath())
	for _, probe := range []string{"/probe1", "/probe2", "/probe3"} {
		for _, p := range []string{probe, probe + "/x"} {
			if _, err := conn.CreateContainer(p, nil, zk.FlagContainer, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
		}
		if err := conn.Delete(probe+"/x", -1); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "the server reaping "+probe, func() bool {
			ok, _, err := conn.Exists(probe)
			return err == nil && !ok
		})
	}
	for p, want := range map[string]bool{"/default/lock": false, "/default": false, "/persistent/lock": true, "/persistent": true} {
		if ok, _, err := conn.Exists(p); err != nil || ok != want {
			t.Errorf("%s exists: %v, %v; want %v", p, ok, err, want)
		}
	}
}
