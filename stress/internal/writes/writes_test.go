package writes

import (
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/internal/zktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(zktest.Wrap(m)) }

func TestFencedStore(t *testing.T) {
	s, err := Listen(filepath.Join(t.TempDir(), "fence.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := Dial(s.Addr())
	defer c.Close()
	write := func(path int32, token int64, proc int32) error {
		_, err := c.Write(path, token, proc, 3)
		return err
	}
	for _, w := range []struct {
		path  int32
		token int64
		proc  int32
		stale bool
	}{
		{0, 5, 0, false},
		{0, 5, 0, false}, // the same hold again
		{0, 7, 1, false},
		{0, 5, 0, true},  // the first holder, after the second's write
		{1, 5, 2, false}, // another path has its own fence
		{0, 9, 2, false},
	} {
		err := write(w.path, w.token, w.proc)
		if got := errors.Is(err, ErrStale); got != w.stale || (err != nil && !got) {
			t.Fatalf("write %+v: %v", w, err)
		}
	}
	if s.High(0) != 9 || s.High(1) != 5 || s.High(2) != 0 {
		t.Errorf("highs %d %d %d", s.High(0), s.High(1), s.High(2))
	}
	log := s.Admitted()
	if len(log) != 5 || log[2].Token != 7 || log[2].Seq != 2 || log[2].G != 3 || log[2].At == 0 {
		t.Fatalf("admitted %+v", log)
	}
	if r := s.Refused(); len(r) != 1 || r[0].Token != 5 || r[0].High != 7 || r[0].Proc != 0 {
		t.Fatalf("refused %+v", r)
	}
	if r := exclusion.CheckWrites(log); !r.OK() || r.Writes != 5 {
		t.Fatalf("the store's log: %+v", r)
	}

	// Concurrent writers of rising tokens: the log stays in token order.
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				_, _ = c.Write(4, int64(100+i*8+g), int32(g), int32(g))
			}
		}()
	}
	wg.Wait()
	if r := exclusion.CheckWrites(s.Admitted()); !r.OK() {
		t.Fatalf("concurrent writers: %+v", r)
	}
	if _, err := c.Write(0, 0, 0, 0); err == nil || errors.Is(err, ErrStale) {
		t.Errorf("token 0: %v", err)
	}

	// Without the fence the stale write lands, and the check says so.
	s.Unfence()
	if err := write(0, 6, 0); err != nil {
		t.Fatalf("unfenced: %v", err)
	}
	if r := exclusion.CheckWrites(s.Admitted()); r.Stale != 1 || r.Examples[0].Write.Token != 6 || r.Examples[0].Prev.Token != 9 {
		t.Fatalf("unfenced store's log: %+v", r)
	}
	if s.High(0) != 9 {
		t.Errorf("high %d after a lower token", s.High(0))
	}
}

func TestChildNames(t *testing.T) {
	ops := Ops("/a/guarded/lock-0", 4294970116, 12, 63)
	create := ops[1].(*zk.CreateRequest)
	name := strings.TrimPrefix(create.Path, "/a/guarded/lock-0/") + "0000000042"
	w, ok := parseChild(name)
	if !ok || w.Token != 4294970116 || w.Proc != 12 || w.G != 63 || w.Seq != 42 {
		t.Fatalf("parseChild(%q) = %+v, %v", name, w, ok)
	}
	for _, bad := range []string{"x-1-2-3-0000000001", "w-1-2-0000000001", "w-1-2-3-00001", "w-a-2-3-0000000001"} {
		if _, ok := parseChild(bad); ok {
			t.Errorf("parseChild(%q) ok", bad)
		}
	}
}

// TestCollector writes through Ops (a multi, as the lock's guarded
// transaction sends it, without the guard) while the collector collects,
// and checks the history against the nodes; a write that bypasses the
// children is found.
func TestCollector(t *testing.T) {
	conn, _, err := zk.Connect(zktest.Servers(t), 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	base := zktest.Path(t)
	guards := []string{GuardBase(base) + "/lock-0", GuardBase(base) + "/lock-1"}
	for _, p := range guards {
		cur := ""
		for _, part := range strings.Split(p[1:], "/") {
			cur += "/" + part
			if _, err := conn.Create(cur, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				t.Fatal(err)
			}
		}
	}
	defer func() {
		for _, p := range append(guards, GuardBase(base), base) {
			_ = conn.Delete(p, -1)
		}
	}()
	c := startCollector(conn, guards, 20*time.Millisecond)
	for i := range 60 {
		p := i % 2
		if _, err := conn.Multi(Ops(guards[p], int64(10+i), int32(p), int32(i))...); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			time.Sleep(30 * time.Millisecond)
		}
	}
	hist, err := c.Finish()
	if err != nil || len(hist) != 60 {
		t.Fatalf("history of %d writes, %v", len(hist), err)
	}
	if r := exclusion.CheckWrites(hist); !r.OK() || len(r.Paths) != 2 || r.Paths[1].Writes != 30 {
		t.Fatalf("history %+v", r)
	}
	if kids, _, _ := conn.Children(guards[0]); len(kids) != 0 {
		t.Errorf("children left: %v", kids)
	}

	// A data write without its child: the versions disagree.
	c = StartCollector(conn, guards)
	if _, err := conn.Set(guards[1], []byte("1 0 0"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Finish(); err == nil || !strings.Contains(err.Error(), "version") {
		t.Fatalf("a write without a child: %v", err)
	}
}
