package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// watch prints the queue at once (empty: the path does not exist yet),
// then again on each change, holder first, until interrupted (exit 0).
func TestWatchPrintsChanges(t *testing.T) {
	p := zktest.Path(t)
	ctx := zktest.Context(t, time.Minute)
	s1, s2 := connect(t), connect(t)
	var out, errOut zktest.SyncBuffer
	wctx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	exited := make(chan int, 1)
	go func() { exited <- runContext(wctx, withZK(t, []string{"watch", "-json", p}), &out, &errOut) }()

	// listings returns the listings printed so far.
	listings := func() []queueView {
		var qs []queueView
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if line == "" {
				continue
			}
			var q queueView
			if err := json.Unmarshal([]byte(line), &q); err != nil {
				t.Fatalf("%v: %q", err, line)
			}
			qs = append(qs, q)
		}
		return qs
	}
	await := func(n int, what string) queueView {
		t.Helper()
		zktest.Eventually(t, 10*time.Second, what, func() bool { return len(listings()) >= n })
		qs := listings()
		return qs[len(qs)-1]
	}

	if q := await(1, "the first listing"); len(q.Nodes) != 0 || q.Path != p || q.Time == nil {
		t.Fatalf("first listing %+v", q)
	}
	a := acquire(t, ctx, newLock(t, s1, p, zklock.WithLabel("a")))
	if q := await(2, "the holder"); len(q.Nodes) != 1 || q.Nodes[0].Label != "a" || !q.Nodes[0].Holder {
		t.Fatalf("after the acquire: %+v", q)
	}
	waited := acquireAsync(ctx, newLock(t, s2, p, zklock.WithLabel("b")))
	if q := await(3, "the waiter"); len(q.Nodes) != 2 || q.Nodes[1].Label != "b" || q.Nodes[1].Holder {
		t.Fatalf("after the waiter queued: %+v", q)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	held(t, waited)
	if q := await(4, "the hand-off"); len(q.Nodes) != 1 || q.Nodes[0].Label != "b" || !q.Nodes[0].Holder {
		t.Fatalf("after the hand-off: %+v", q)
	}
	interrupt()
	if code := <-exited; code != exitOK {
		t.Fatalf("watch exited %d after the interrupt: %s", code, errOut.String())
	}
}

// watch -count stops by itself; the human form has a timestamped heading.
func TestWatchCount(t *testing.T) {
	p := zktest.Path(t)
	s := connect(t)
	acquire(t, zktest.Context(t, 10*time.Second), newLock(t, s, p))
	r := tierlock(t, "watch", "-count", "1", p)
	r.want(t, exitOK, p+"  (1 node)", "holds")
}

// watch keeps printing across a dropped connection (go-zookeeper re-sets
// the watch in the same session) and across a session expiry (the watch
// fires with EventNotWatching and is armed again on the new session):
// changes made while it was cut off are printed once it is back.
func TestWatchSurvivesDropAndExpiry(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a drop and a session expiry, about 7 s")
	}
	p := zktest.Path(t)
	ctx := zktest.Context(t, time.Minute)
	defer func(d time.Duration) { sessionTimeout = d }(sessionTimeout)
	sessionTimeout = 2 * time.Second // expires while cut off for 5 s below
	proxy, err := faultproxy.New(zktest.Servers(t)[0], faultproxy.WithLogger(zktest.QuietLog))
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	var out, errOut zktest.SyncBuffer
	wctx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	exited := make(chan int, 1)
	go func() {
		exited <- runContext(wctx, []string{"watch", "-zk", proxy.Addr(), "-json", "-v", p}, &out, &errOut)
	}()
	lines := func() int { return strings.Count(out.String(), "\n") }
	zktest.Eventually(t, 10*time.Second, "the first listing", func() bool { return lines() >= 1 })

	s := connect(t)
	a := newLock(t, s, p, zklock.WithLabel("a"))
	ha := acquire(t, ctx, a)
	zktest.Eventually(t, 10*time.Second, "the holder", func() bool { return strings.Contains(out.String(), `"label":"a"`) })

	proxy.DropAll()
	acquire(t, ctx, newLock(t, s, p+"-b", zklock.WithLabel("unrelated"))) // traffic elsewhere changes nothing
	if err := ha.Release(); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 10*time.Second, "the release, after the drop", func() bool {
		return strings.HasSuffix(out.String(), `"nodes":[]}`+"\n")
	})

	// Cut off for longer than the session timeout: the session expires
	// meanwhile.
	proxy.Partition(0)
	acquire(t, ctx, a)
	time.Sleep(5 * time.Second)
	proxy.Heal()
	zktest.Eventually(t, 20*time.Second, "the acquire made while cut off", func() bool {
		return strings.Contains(out.String()[strings.LastIndex(strings.TrimSuffix(out.String(), "\n"), "\n")+1:], `"label":"a"`)
	})
	if !strings.Contains(errOut.String(), "state=expired") {
		t.Fatalf("the session did not expire; the test did not test the expiry:\n%s", errOut.String())
	}
	interrupt()
	if code := <-exited; code != exitOK {
		t.Fatalf("watch exited %d: %s", code, errOut.String())
	}
}
