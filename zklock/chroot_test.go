package zklock_test

import (
	"context"
	"errors"
	"path"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// chrooted returns the shared server's addresses with chroot after the
// last, as a Java connection string has it.
func chrooted(t *testing.T, chroot string) []string {
	servers := zktest.Servers(t)
	servers[len(servers)-1] += chroot
	return servers
}

// newChroot makes a chroot node for the test, seen from the root by the
// session it returns.
func newChroot(t *testing.T) (chroot string, root *zklock.Session) {
	root = connect(t, zktest.Servers(t))
	chroot = zktest.Path(t)
	if err := zkCreateAll(root.Conn(), chroot); err != nil {
		t.Fatal(err)
	}
	return chroot, root
}

// A chrooted session's locks live under its chroot on the server, and a
// waiter on a second chrooted session is woken by the watch event (the
// recheck, which would wake it without one, is an hour away): the event's
// path came back without the chroot, as the lock expects it.
func TestChrootedLocksLiveUnderTheChroot(t *testing.T) {
	chroot, root := newChroot(t)
	ctx := zktest.Context(t, time.Minute)
	lockPath := "/jobs/" + path.Base(chroot)
	a := newLock(t, connect(t, chrooted(t, chroot)), lockPath, zklock.WithRecheckInterval(time.Hour))
	b := newLock(t, connect(t, chrooted(t, chroot)), lockPath, zklock.WithRecheckInterval(time.Hour))
	held, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(held.Node(), lockPath+"/_c_") {
		t.Errorf("the hold's node is %s, want it in %s, as the session names it", held.Node(), lockPath)
	}
	if !exists(t, root.Conn(), chroot+held.Node()) {
		t.Errorf("%s is not on the server under the chroot %s", held.Node(), chroot)
	}
	if exists(t, root.Conn(), lockPath) {
		t.Errorf("%s exists outside the chroot", lockPath)
	}
	waiter := goAcquire(ctx, b)
	zktest.Eventually(t, 10*time.Second, "the waiter's node", func() bool {
		return len(zktest.Children(t, root.Conn(), chroot+lockPath)) == 2
	})
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-waiter:
		if got.err != nil {
			t.Fatal(got.err)
		}
		got.h.Release()
	case <-time.After(20 * time.Second):
		t.Fatal("the waiter was not woken by its predecessor's deletion")
	}
}

// What runonce, election and the inspector do through Session.Conn lives
// under the chroot too: creates (and the names the server gives them), a
// multi, a sync, and watch events, also after a reconnect re-armed the
// watches (setWatches) on a new connection.
func TestChrootCoversSessionConn(t *testing.T) {
	chroot, root := newChroot(t)
	back := make(chan struct{}, 1) // connected again after a disconnection
	var was zklock.State
	s := connect(t, chrooted(t, chroot), zklock.WithStateListener(func(st zklock.State) {
		if was == zklock.StateDisconnected && st == zklock.StateConnected {
			back <- struct{}{}
		}
		was = st
	}))
	conn, acl := s.Conn(), zk.WorldACL(zk.PermAll)
	want := func(got, want string, err error) {
		t.Helper()
		if err != nil || got != want {
			t.Fatalf("got %q, %v; want %q", got, err, want)
		}
	}
	got, err := conn.Create("/runs", nil, 0, acl)
	want(got, "/runs", err)
	got, err = conn.Create("/runs/r-", []byte("x"), zk.FlagSequence, acl)
	want(got, "/runs/r-0000000000", err)
	res, err := conn.Multi(&zk.CreateRequest{Path: "/runs/m", Acl: acl}, &zk.SetDataRequest{Path: "/runs", Version: -1})
	want(res[0].String, "/runs/m", err)
	got, err = conn.Sync("/runs")
	want(got, "/runs", err)
	for _, p := range []string{"/runs/r-0000000000", "/runs/m"} {
		if !exists(t, root.Conn(), chroot+p) {
			t.Errorf("%s is not under the chroot", p)
		}
	}

	_, _, data, err := conn.GetW("/runs")
	want("", "", err)
	_, _, missing, err := conn.ExistsW("/missing")
	want("", "", err)
	_, _, top, err := conn.GetW("/")
	want("", "", err)
	mustSet(t, root.Conn(), chroot+"/runs")
	mustCreate(t, root.Conn(), chroot+"/missing")
	mustSet(t, root.Conn(), chroot)
	wantEvent(t, data, zk.EventNodeDataChanged, "/runs")
	wantEvent(t, missing, zk.EventNodeCreated, "/missing")
	wantEvent(t, top, zk.EventNodeDataChanged, "/")

	// A reconnect: the watches go to the new connection in setWatches.
	_, _, children, err := conn.ChildrenW("/runs")
	want("", "", err)
	_, _, data, err = conn.GetW("/runs")
	want("", "", err)
	var cut atomic.Bool
	zklock.SetWriteHook(s, func(op int32, _ []byte) error {
		if op == zklock.OpExists && cut.CompareAndSwap(false, true) {
			return errors.New("test: the connection is cut")
		}
		return nil
	})
	conn.Exists("/") // fails, and the connection with it
	select {
	case <-back: // the server fires a re-armed watch whose node changed before setWatches came
	case <-time.After(20 * time.Second):
		t.Fatal("no reconnection")
	}
	mustCreate(t, root.Conn(), chroot+"/runs/late")
	mustSet(t, root.Conn(), chroot+"/runs")
	wantEvent(t, children, zk.EventNodeChildrenChanged, "/runs")
	wantEvent(t, data, zk.EventNodeDataChanged, "/runs")
}

// A server list whose chroot is "/" ("host:2181/") has none, as the Java
// client, Curator and kazoo read it: the session connects, and its locks
// live at the paths it names.
func TestRootChrootIsNone(t *testing.T) {
	_, root := newChroot(t)
	s := connect(t, chrooted(t, "/"))
	p := zktest.Path(t)
	h, err := newLock(t, s, p).Acquire(zktest.Context(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	if !exists(t, root.Conn(), h.Node()) {
		t.Errorf("%s is not on the server at the path the session named", h.Node())
	}
}

// A chroot that does not exist is refused at Connect, at once and with
// zk.ErrNoNode: nothing could be locked under it.
func TestChrootMustExist(t *testing.T) {
	chroot := zktest.Path(t) + "/missing"
	start := time.Now()
	s, err := zklock.Connect(context.Background(), chrooted(t, chroot), zklock.WithTestHooks(), zklock.WithLogger(zktest.QuietLog))
	if err == nil {
		s.Close()
		t.Fatalf("Connect to the missing chroot %s succeeded", chroot)
	}
	if !errors.Is(err, zk.ErrNoNode) || !strings.Contains(err.Error(), chroot+" does not exist") {
		t.Fatalf("err = %v after %v, want zk.ErrNoNode naming %s", err, time.Since(start), chroot)
	}
	t.Logf("after %v: %v", time.Since(start).Round(time.Millisecond), err)
}

func mustSet(t *testing.T, conn *zk.Conn, p string) {
	t.Helper()
	if _, err := conn.Set(p, []byte("changed"), -1); err != nil {
		t.Fatal(err)
	}
}

func mustCreate(t *testing.T, conn *zk.Conn, p string) {
	t.Helper()
	if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
}

func wantEvent(t *testing.T, ch <-chan zk.Event, typ zk.EventType, path string) {
	t.Helper()
	select {
	case ev := <-ch:
		if ev.Type != typ || ev.Path != path {
			t.Errorf("event %v on %q, want %v on %q", ev.Type, ev.Path, typ, path)
		}
	case <-time.After(20 * time.Second):
		t.Errorf("no %v event on %q", typ, path)
	}
}
