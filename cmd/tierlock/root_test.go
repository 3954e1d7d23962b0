package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// rootOfLocks makes a root of four held locks, one nested, and a waiter
// on the first, and returns the root.
func rootOfLocks(t *testing.T) string {
	root := zktest.Path(t)
	ctx := zktest.Context(t, 30*time.Second)
	s1, s2 := connect(t), connect(t)
	for i := range 3 {
		acquire(t, ctx, newLock(t, s1, fmt.Sprintf("%s/job-%d", root, i), zklock.WithLabel(fmt.Sprintf("worker-%d", i))))
	}
	acquireAsync(ctx, newLock(t, s2, root+"/job-0", zklock.WithLabel("second")))
	waitQueue(t, s1, root+"/job-0", 2)
	acquire(t, ctx, newLock(t, s2, root+"/nested/job-9"))
	return root
}

// ls of a root of locks (a registry's root): one line per lock, named
// relative to the root, with its family, held and queued times, token,
// waiting processes and holder, then a legend and a total; -l, and ls of
// a lock path itself, give every node.
func TestLsRoot(t *testing.T) {
	root := rootOfLocks(t)
	r := tierlock(t, "ls", root)
	r.want(t, exitOK, "4 locks, 4 held, 1 process waiting")
	if n := strings.Count(r.stdout, "\n"); n != 9 || !strings.HasPrefix(r.stdout, "LOCK ") ||
		!strings.HasSuffix(r.stdout, "\n4 locks, 4 held, 1 process waiting\n") {
		t.Fatalf("want a header, 4 locks, a legend of 3 lines and the total last, %d lines:\n%s", n, r.stdout)
	}
	wantLock(t, r.stdout, "job-0", "lock", "1", `"worker-0"`)
	wantLock(t, r.stdout, "job-1", "lock", "0", `"worker-1"`)
	wantLock(t, r.stdout, "job-2", "lock", "0", `"worker-2"`)
	wantLock(t, r.stdout, "nested/job-9", "lock", "0", fmt.Sprintf("%d@", os.Getpid()))
	if strings.Contains(r.stdout, "  -  ") {
		t.Errorf("a held lock without a held time, token or holder:\n%s", r.stdout)
	}

	// Every node: -l, or a lock path itself.
	tierlock(t, "ls", "-l", root).want(t, exitOK, root+"/job-0  (2 nodes)", root+"/nested/job-9  (1 node)", `label="second"`)
	r = tierlock(t, "ls", root+"/job-0")
	r.want(t, exitOK, root+"/job-0  (2 nodes)", "holds  mutex", "waits  mutex")
	if strings.Contains(r.stdout, "locks,") {
		t.Errorf("ls of a lock path printed a total:\n%s", r.stdout)
	}
}

// ls -json of a root: the same, with the total, and each lock's queue as
// ls -json of a lock path gives it.
func TestLsRootJSON(t *testing.T) {
	root := rootOfLocks(t)
	r := tierlock(t, "ls", "-json", root)
	r.want(t, exitOK)
	var got struct {
		Root  string
		Locks []lockSummary
		Total totals
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if got.Root != root || got.Total != (totals{Locks: 4, Held: 4, Waiting: 1}) || len(got.Locks) != 4 {
		t.Fatalf("ls -json: %+v", got)
	}
	type key struct {
		Name, Path, Family       string
		Holders, Waiting, Nodes  int
		HolderLabel, WaiterLabel string
	}
	l := got.Locks[0]
	k := key{l.Name, l.Path, l.Family, l.Holders, l.Waiting, len(l.Nodes), "", ""}
	if l.Holder != nil && len(l.Nodes) == 2 {
		k.HolderLabel, k.WaiterLabel = l.Holder.Label, l.Nodes[1].Label
	}
	if want := (key{"job-0", root + "/job-0", "lock", 1, 1, 2, "worker-0", "second"}); k != want {
		t.Errorf("job-0: %+v, want %+v", k, want)
	}
	if l := got.Locks[3]; l.Name != "nested/job-9" || l.AgeSec < 0 {
		t.Errorf("nested lock: %+v", l)
	}
}

// watchLine is one line of watch -json: a single lock's listing, or a
// root's event.
type watchLine struct {
	Time    *time.Time
	Event   string
	Path    string
	Name    string
	Waiting int
	Holder  *nodeView
	Nodes   []nodeView
	Total   *totals
}

// watchJSON runs watch -json args in the background until the test ends
// it, and returns its lines so far, and a function that interrupts it and
// returns its exit code.
func watchJSON(t *testing.T, ctx context.Context, args ...string) (lines func() []watchLine, stop func() int, errOut *zktest.SyncBuffer) {
	var out zktest.SyncBuffer
	errOut = &zktest.SyncBuffer{}
	wctx, interrupt := context.WithCancel(ctx)
	t.Cleanup(interrupt)
	exited := make(chan int, 1)
	go func() {
		exited <- runContext(wctx, withZK(t, append([]string{"watch", "-json"}, args...)), &out, errOut)
	}()
	lines = func() []watchLine {
		var ls []watchLine
		for _, s := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if s == "" {
				continue
			}
			var l watchLine
			if err := json.Unmarshal([]byte(s), &l); err != nil {
				t.Fatalf("%v: %q", err, s)
			}
			ls = append(ls, l)
		}
		return ls
	}
	return lines, func() int { interrupt(); return <-exited }, errOut
}

// awaitEvent waits for a line of event ev about lock name that ok accepts.
func awaitEvent(t *testing.T, lines func() []watchLine, ev, name string, ok func(watchLine) bool) watchLine {
	t.Helper()
	var found watchLine
	zktest.Eventually(t, 10*time.Second, ev+" "+name, func() bool {
		for _, l := range lines() {
			if l.Event == ev && l.Name == name && (ok == nil || ok(l)) {
				found = l
				return true
			}
		}
		return false
	})
	return found
}

func holderLabel(label string) func(watchLine) bool {
	return func(l watchLine) bool { return l.Holder != nil && l.Holder.Label == label }
}

// watch of a root follows every lock below it: those there at the start
// (listed, then a total), and those created later, at any depth; a line
// each time a lock is acquired, queued for, handed to a new holder or
// released.
func TestWatchRoot(t *testing.T) {
	root := zktest.Path(t)
	ctx := zktest.Context(t, time.Minute)
	s1, s2 := connect(t), connect(t)
	a := acquire(t, ctx, newLock(t, s1, root+"/a", zklock.WithLabel("a")))

	lines, stop, errOut := watchJSON(t, ctx, root)
	awaitEvent(t, lines, "listed", "a", holderLabel("a"))
	if tot := awaitEvent(t, lines, "total", "", nil); *tot.Total != (totals{Locks: 1, Held: 1}) {
		t.Fatalf("total %+v", *tot.Total)
	}

	b := acquire(t, ctx, newLock(t, s1, root+"/b", zklock.WithLabel("b")))
	awaitEvent(t, lines, "acquired", "b", holderLabel("b"))
	waited := acquireAsync(ctx, newLock(t, s2, root+"/a", zklock.WithLabel("a2")))
	awaitEvent(t, lines, "queue", "a", func(l watchLine) bool { return l.Waiting == 1 && l.Holder.Label == "a" })
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	awaitEvent(t, lines, "new-holder", "a", func(l watchLine) bool { return l.Waiting == 0 && l.Holder.Label == "a2" })
	if err := held(t, waited).Release(); err != nil {
		t.Fatal(err)
	}
	awaitEvent(t, lines, "released", "a", nil)
	if err := b.Release(); err != nil {
		t.Fatal(err)
	}
	awaitEvent(t, lines, "released", "b", nil)
	acquire(t, ctx, newLock(t, s2, root+"/dir/c", zklock.WithLabel("c")))
	awaitEvent(t, lines, "acquired", "dir/c", holderLabel("c"))

	if code := stop(); code != exitOK {
		t.Fatalf("watch exited %d: %s", code, errOut.String())
	}
	// Each change once: nothing printed twice for one change.
	n := map[string]int{}
	for _, l := range lines() {
		n[l.Event+" "+l.Name]++
	}
	for k, v := range n {
		if v != 1 {
			t.Errorf("%q printed %d times: %+v", k, v, n)
		}
	}
}

// watch -count 1 of a root prints the table and the total, and stops.
func TestWatchRootCount(t *testing.T) {
	root := zktest.Path(t)
	ctx := zktest.Context(t, 30*time.Second)
	acquire(t, ctx, newLock(t, connect(t), root+"/job-1", zklock.WithLabel("w")))
	r := tierlock(t, "watch", "-count", "1", root)
	r.want(t, exitOK, "TIME", "EVENT", "listed", "job-1", `"w"`, "1 lock, 1 held, 0 processes waiting under "+root)
}

// A path that does not exist yet is watched as a lock; when locks appear
// below it, it is a root, and watch follows them.
func TestWatchBecomesRoot(t *testing.T) {
	root := zktest.Path(t)
	ctx := zktest.Context(t, time.Minute)
	lines, stop, errOut := watchJSON(t, ctx, root)
	zktest.Eventually(t, 10*time.Second, "the first listing", func() bool { return len(lines()) >= 1 })
	if l := lines()[0]; l.Path != root || len(l.Nodes) != 0 || l.Event != "" {
		t.Fatalf("first listing %+v", l)
	}
	acquire(t, ctx, newLock(t, connect(t), root+"/x", zklock.WithLabel("x")))
	zktest.Eventually(t, 10*time.Second, "x, listed or acquired", func() bool {
		for _, l := range lines() {
			if (l.Event == "listed" || l.Event == "acquired") && l.Name == "x" && l.Holder != nil && l.Holder.Label == "x" {
				return true
			}
		}
		return false
	})
	if !strings.Contains(errOut.String(), "has locks below it now") {
		t.Errorf("no word of the switch on stderr: %q", errOut.String())
	}
	if code := stop(); code != exitOK {
		t.Fatalf("watch exited %d: %s", code, errOut.String())
	}
}
