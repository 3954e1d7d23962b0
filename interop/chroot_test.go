package interop_test

import (
	"errors"
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
)

// A fleet in a chroot, as other clients name it: tierlock processes given
// "host:port/<chroot>" (strict and with hand-off), and a Curator process
// with namespace("<chroot>") or a kazoo process given the same connection
// string, take turns on one lock path, one holder at a time (the
// independent checker reads their records); the lock lived under the
// chroot, nothing of it outside. Curator and kazoo are in separate fleets
// (TestCuratorAndKazooConflict).
func TestChrootFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs Curator's and kazoo's peers, about 10 s")
	}
	for _, peer := range []string{famCurator, famKazoo} {
		t.Run(peer, func(t *testing.T) {
			admin := zktest.Connect(t, zktest.Servers(t)).Conn()
			f := fleet{servers: zktest.Servers(t), chroot: zktest.Path(t) + "/myapp", path: zktest.Path(t)}
			mkdirs(t, admin, f.chroot)
			o := runFleetAt(t, f, 3*time.Second, member{famTier, 4}, member{famTierHandoff, 4}, member{peer, 4})
			requireExclusion(t, o)
			if ok, _, err := admin.Exists(f.chroot + f.path); err != nil || !ok {
				t.Errorf("%s under the chroot: exists %v, %v", f.path, ok, err)
			}
			if ok, _, err := admin.Exists(f.path); err != nil || ok {
				t.Errorf("%s outside the chroot: exists %v, %v", f.path, ok, err)
			}
		})
	}
}

// mkdirs creates p and its missing ancestors, persistent.
func mkdirs(t *testing.T, conn *zk.Conn, p string) {
	t.Helper()
	if p == "/" {
		return
	}
	mkdirs(t, conn, path.Dir(p))
	if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
}
