package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/peers"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

type lsOutput struct {
	Root  string      `json:"root"`
	Locks []queueView `json:"locks"`
}

// ls lists every lock path under a root with its queue, holder first, and
// for each node its kind, family, owner session, age and data: a tierlock
// mutex with a holder and a waiter, a read/write lock, a semaphore's
// leases, and a kazoo peer process's Lock.
func TestLsKinds(t *testing.T) {
	root := zktest.Path(t)
	ctx := zktest.Context(t, time.Minute)
	s1, s2 := connect(t), connect(t)

	mutex := root + "/mutex"
	holder := acquire(t, ctx, newLock(t, s1, mutex, zklock.WithLabel("holder")))
	waited := acquireAsync(ctx, newLock(t, s2, mutex, zklock.WithLabel("waiter")))
	waitQueue(t, s1, mutex, 2)

	rw, err := zklock.NewRWLock(s1, root+"/rw")
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	acquire(t, ctx, rw.ReadLock())
	sem, err := zklock.NewSemaphore(s2, root+"/sem", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer sem.Close()
	lease, err := sem.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release()

	kazooPath := root + "/kazoo"
	if err := peers.Check(peers.Kazoo); err != nil {
		t.Fatal(err)
	}
	kz, err := peers.Serve(ctx, peers.Kazoo, filepath.Join(os.TempDir(), "tierlock-peers"), zktest.Servers(t), 10*time.Second, 1, []string{kazooPath})
	if err != nil {
		t.Fatal(err)
	}
	defer kz.Close()
	if _, err := kz.Acquire(ctx, 0, 0); err != nil {
		t.Fatal(err)
	}

	r := tierlock(t, "ls", "-json", root)
	r.want(t, exitOK)
	var got lsOutput
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	byPath := map[string]queueView{}
	for _, q := range got.Locks {
		byPath[q.Path] = q
	}
	if len(byPath) != 4 {
		t.Fatalf("lock paths %v, want mutex, rw, sem/leases, kazoo", keys(byPath))
	}
	session := func(s *zklock.Session) string { return fmt.Sprintf("0x%x", s.SessionID()) }
	m := byPath[mutex].Nodes
	if len(m) != 2 || !m[0].Holder || m[1].Holder || m[0].Kind != "mutex" || m[0].Family != zklock.FamilyLock ||
		m[0].Session != session(s1) || m[1].Session != session(s2) || m[0].Label != "holder" || m[1].Label != "waiter" ||
		m[0].Pid != os.Getpid() || m[0].Node != holder.Node() || m[0].AgeSec < 0 {
		t.Errorf("mutex queue %+v", m)
	}
	if q := byPath[root+"/rw"].Nodes; len(q) != 1 || q[0].Kind != "read" || !q[0].Holder {
		t.Errorf("read/write queue %+v", q)
	}
	if q := byPath[root+"/sem/leases"].Nodes; len(q) != 1 || q[0].Kind != "lease" || !q[0].Holder || q[0].Session != session(s2) {
		t.Errorf("leases %+v", q)
	}
	if q := byPath[kazooPath].Nodes; len(q) != 1 || q[0].Kind != "mutex" || q[0].Family != zklock.FamilyKazooLock ||
		!q[0].Holder || q[0].Session == session(s1) || q[0].Session == session(s2) {
		t.Errorf("kazoo queue %+v", q)
	}

	// The long form: a heading per path, holders first.
	r = tierlock(t, "ls", "-l", root)
	r.want(t, exitOK, mutex+"  (2 nodes)", "holds  mutex  lock", "waits  mutex  lock", `label="waiter"`,
		"kazoo-lock", "curator-read", "lease")
	if strings.Index(r.stdout, `label="holder"`) > strings.Index(r.stdout, `label="waiter"`) {
		t.Errorf("holder not first:\n%s", r.stdout)
	}

	// A lock path itself lists just that queue.
	r = tierlock(t, "ls", "-json", mutex)
	r.want(t, exitOK)
	got = lsOutput{}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got.Locks) != 1 {
		t.Fatalf("ls of a lock path: %v %s", err, r.stdout)
	}
	// The whole tree, from the root: one line per lock.
	r = tierlock(t, "ls", "/")
	r.want(t, exitOK, " held, ")
	wantLock(t, r.stdout, mutex, "lock", "1", "")
	wantLock(t, r.stdout, kazooPath, "kazoo-lock", "0", "")
	wantLock(t, r.stdout, root+"/rw", "curator-read", "0", "")

	if err := holder.Release(); err != nil {
		t.Fatal(err)
	}
	held(t, waited)
}

func keys(m map[string]queueView) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// wantLock checks that the table of a root in out has a row for lock
// name with that family and count of waiting processes, whose holder
// contains holder.
func wantLock(t *testing.T, out, name, family, waiting, holder string) {
	t.Helper()
	c := cells(t, out, name)
	if c["FAMILY"] != family || c["WAITING-PROCS"] != waiting || !strings.Contains(c["HOLDER"], holder) {
		t.Errorf("%s: %q, want family %s, %s waiting, holder %s, in:\n%s", name, c, family, waiting, holder, out)
	}
}
