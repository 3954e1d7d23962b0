package memzk_test

import (
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/internal/zktest"
)

// TestContainersReaped: the server's container manager deletes the empty
// containers that had a child, not one that never had any; a container
// emptied by a pass (its last child a container the pass deleted) goes on
// the next pass only, as the pass lists its candidates first. The double's
// ReapContainers is one such pass. The server runs its passes on its own
// clock, every minute unless told otherwise: this test starts a server of
// its own that runs them every second, and polls.
func TestContainersReaped(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a private ensemble, about 2 s")
	}
	c1 := zktest.Ensemble(t, 1, zkserver.WithContainerCheck(time.Second))
	p := newPair(t, c1.Addrs())
	p.reset(zktest.Path(t))
	answers(t, p, []step{
		one(A, ct("/used")), one(A, cr("/used/c", persistent)), one(A, ct("/never")), one(A, dl("/used/c", -1)),
		one(A, ct("/outer")), one(A, ct("/outer/inner")), one(A, cr("/outer/inner/x", persistent)), one(A, dl("/outer/inner/x", -1)),
	}, []string{"ok /used", "ok /used/c", "ok /never", "ok", "ok /outer", "ok /outer/inner", "ok /outer/inner/x", "ok"})

	c := p.conns[A]
	gone := func(rel string) bool {
		t.Helper()
		ok, _, err := c.Exists(p.real.root + rel)
		if err != nil {
			t.Fatal(err)
		}
		return !ok
	}
	between := false // inner gone, outer not yet
	deadline := time.Now().Add(10 * time.Second)
	for !gone("/outer") {
		between = between || gone("/outer/inner")
		if time.Now().After(deadline) {
			t.Fatal("the server did not reap /outer within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !between {
		t.Fatal("the server reaped /outer/inner and /outer in one pass")
	}

	p.tree.ReapContainers()
	for rel, want := range map[string]bool{"/used": false, "/outer/inner": false, "/outer": true, "/never": true} {
		if ok, _ := p.tree.Exists(p.dbl.root + rel); ok != want {
			t.Errorf("after one pass of the double: %s exists %v, want %v", rel, ok, want)
		}
	}
	p.tree.ReapContainers()
	if real, dbl := p.dumps(); real != dbl {
		t.Errorf("the trees differ:\nserver:\n%s\ndouble:\n%s", real, dbl)
	}
}
