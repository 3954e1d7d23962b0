package memzk_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/writes/memzk"
)

// The double's own promises, which no server can be asked about.

// TestSessionEndedRefusesWrites: once the server has ended a session, its
// ephemeral nodes are gone and its writes fail whole with
// zk.ErrSessionExpired, so that no ephemeral node outlives its session;
// ending it again does nothing.
func TestSessionEndedRefusesWrites(t *testing.T) {
	tree := memzk.New()
	all := zk.WorldACL(zk.PermAll)
	if _, err := tree.Create(7, "/a", nil, zk.FlagPersistent, all); err != nil {
		t.Fatal(err)
	}
	if _, err := tree.Create(7, "/a/e", nil, zk.FlagEphemeral, all); err != nil {
		t.Fatal(err)
	}
	tree.CloseSession(7)
	if ok, _ := tree.Exists("/a/e"); ok || len(tree.Ephemerals(7)) != 0 {
		t.Fatal("the ended session's ephemeral node is still there")
	}
	zxid := tree.Zxid()
	if _, err := tree.Create(7, "/a/f", nil, zk.FlagEphemeral, all); !errors.Is(err, zk.ErrSessionExpired) {
		t.Errorf("Create: %v, want zk.ErrSessionExpired", err)
	}
	if res, err := tree.Multi(7, &zk.CreateRequest{Path: "/a/g", Acl: all}); !errors.Is(err, zk.ErrSessionExpired) || len(res) != 0 {
		t.Errorf("Multi: %v %v, want no result and zk.ErrSessionExpired", res, err)
	}
	if err := tree.Delete(7, "/a", -1); !errors.Is(err, zk.ErrSessionExpired) {
		t.Errorf("Delete: %v, want zk.ErrSessionExpired", err)
	}
	if _, err := tree.Set(7, "/a", nil, -1); !errors.Is(err, zk.ErrSessionExpired) {
		t.Errorf("Set: %v, want zk.ErrSessionExpired", err)
	}
	tree.CloseSession(7)
	if kids, _, _ := tree.Children("/a"); len(kids) != 0 || tree.Zxid() != zxid {
		t.Errorf("after the refusals: children %v, zxid %d (was %d)", kids, tree.Zxid(), zxid)
	}
}

// TestBadOpsRefused: what Conn.Multi could not send is refused before
// anything is applied, a nil pointer included, without a panic.
func TestBadOpsRefused(t *testing.T) {
	tree := memzk.New()
	for _, op := range []any{nil, (*zk.CreateRequest)(nil), (*zk.DeleteRequest)(nil), (*zk.SetDataRequest)(nil), (*zk.CheckVersionRequest)(nil), zk.DeleteRequest{}, "x"} {
		res, err := tree.Multi(1, &zk.CreateRequest{Path: "/a", Acl: zk.WorldACL(zk.PermAll)}, op)
		if err == nil || len(res) != 0 {
			t.Errorf("%#v: %v %v, want no result and an error", op, res, err)
		}
	}
	if ok, _ := tree.Exists("/a"); ok || tree.Zxid() != 0 {
		t.Error("a refused multi was applied")
	}
}

// TestDeterministic: the same steps give the same answers and the same
// tree, zxids included, whatever the order Go's maps iterate in: the
// explorer's schedules replay from their seeds. The sessions' ends and the
// container passes, which delete many nodes at once, are in each program.
func TestDeterministic(t *testing.T) {
	for seed := range uint64(50) {
		first := program(seed)
		for range 5 {
			if again := program(seed); again != first {
				a, b := strings.Split(first, "\n"), strings.Split(again, "\n")
				i := 0
				for i < min(len(a), len(b)) && a[i] == b[i] {
					i++
				}
				t.Fatalf("seed %d: two runs differ at line %d:\n  %s\n  %s", seed, i, a[min(i, len(a)-1)], b[min(i, len(b)-1)])
			}
		}
	}
}

// program runs seed's steps on a new tree, then ends every session and
// reaps containers twice, and returns every answer and the tree, with
// zxids.
func program(seed uint64) string {
	tree := memzk.New()
	all := zk.WorldACL(zk.PermAll)
	if _, err := tree.Create(1, "/r", nil, zk.FlagPersistent, all); err != nil {
		return err.Error()
	}
	var b strings.Builder
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range 40 {
		// Containers under parents of their own: the order of a pass's
		// deletes shows in the parents' pzxids.
		p := fmt.Sprintf("/p%d", i%8)
		tree.Create(1, p, nil, zk.FlagPersistent, all)
		p += "/c"
		tree.CreateContainer(1, p, nil, all)
		_, err := tree.Create(int64(1+r.IntN(3)), p+"/e", nil, zk.FlagEphemeralSequential, all)
		fmt.Fprintln(&b, err)
	}
	v := view{root: "/r", names: map[int64]string{1: "A", 2: "B", 3: "C"}}
	for _, st := range generate(r, 60) {
		if !st.multi && st.ops[0].kind == kClose {
			tree.CloseSession(int64(1 + st.sess))
			continue
		}
		fmt.Fprintln(&b, run(session{tree, int64(1 + st.sess)}, v, st))
	}
	for sid := range int64(4) {
		tree.CloseSession(sid)
	}
	tree.ReapContainers()
	tree.ReapContainers()
	var walk func(p string)
	walk = func(p string) {
		_, s := tree.Exists(p)
		fmt.Fprintf(&b, "%s %+v\n", p, *s)
		kids, _, _ := tree.Children(p)
		for _, k := range kids {
			walk(strings.TrimSuffix(p, "/") + "/" + k)
		}
	}
	walk("/")
	return b.String()
}
