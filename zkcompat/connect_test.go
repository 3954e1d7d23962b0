package zkcompat_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zkcompat"
)

// dropInConn is zkcompat.Connect's connection to servers, its events
// drained, closed when the test ends, once it has a session.
func dropInConn(t *testing.T, servers []string, timeout time.Duration) *zk.Conn {
	t.Helper()
	c, events, err := zkcompat.Connect(servers, timeout, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	ended := zktest.DrainEvents(events)
	t.Cleanup(func() {
		c.Close()
		zktest.AwaitClosed(t, "the end of go-zookeeper's loop (its events channel closed)", ended)
	})
	zktest.Eventually(t, 10*time.Second, "a session", func() bool { return c.State() == zk.StateHasSession })
	return c
}

// TestConnectFirstLockOnItsHandshake: on ZooKeeper's default tick (2 s),
// the first Lock on a connection of zkcompat.Connect's is granted on its
// create's answer, as zk.Lock's is: LockContext with a deadline of 100 ms
// (or twenty times what zk.Lock's first Lock took here, if more: the
// margin the machine gives) takes a free lock. On zk.Connect's connection
// the drop-in's session cannot see the handshake and proves its first
// lease across 5/8 of the tick, 1.25 s (TestFirstLockWaitsForTheLease):
// the same deadline then fails, as it did for every connection before
// Connect.
func TestConnectFirstLockOnItsHandshake(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server of its own (tickTime 2 s)")
	}
	const timeout = 10 * time.Second
	servers := zktest.Ensemble(t, 1, zkserver.WithTickTime(2*time.Second)).Addrs()
	acl := zk.WorldACL(zk.PermAll)

	base := connTo(t, servers, timeout)
	dir := zktest.Path(t)
	for i := 1; i <= len(dir); i++ { // the parents of both locks' paths, as a migrant's are
		if i == len(dir) || dir[i] == '/' {
			if _, err := base.Create(dir[:i], nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				t.Fatal(err)
			}
		}
	}
	zl := zk.NewLock(base, dir+"/zk", acl)
	start := time.Now()
	if err := zl.Lock(); err != nil {
		t.Fatal(err)
	}
	theirs := time.Since(start)
	if err := zl.Unlock(); err != nil {
		t.Fatal(err)
	}
	deadline := max(100*time.Millisecond, 20*theirs)

	c := dropInConn(t, servers, timeout)
	l := zkcompat.NewLock(c, dir+"/drop-in", acl)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start = time.Now()
	if err := l.LockContext(ctx); err != nil {
		t.Fatalf("the first LockContext(%v) of a free lock on a new connection of Connect's: %v (zk.Lock's first Lock: %v)", deadline, err, theirs)
	}
	t.Logf("first Lock: the drop-in's %v on Connect's connection, zk.Lock's %v", time.Since(start), theirs)
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// TestConnectIsTheCallersConnection: the connection Connect returns is the
// caller's as zk.Connect's is: its requests go through it, the drop-in's
// CloseConn leaves it open, and the caller's Close ends the drop-in's
// session there: a Lock on it then fails with zk.ErrConnectionClosed, as
// zk.Lock's does, and nothing of the session is left running (goleak).
func TestConnectIsTheCallersConnection(t *testing.T) {
	servers := zktest.Servers(t)
	c, events, err := zkcompat.Connect(servers, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	ended := zktest.DrainEvents(events)
	path := zktest.Path(t)
	l := zkcompat.NewLock(c, path, zk.WorldACL(zk.PermAll))
	if err := l.Lock(); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	zkcompat.CloseConn(c)
	if _, _, err := c.Exists(path); err != nil {
		t.Fatalf("the caller's request after CloseConn: %v", err)
	}
	if err := l.Lock(); err != nil { // a session as on zk.Connect's connection
		t.Fatal(err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	zktest.AwaitClosed(t, "the end of go-zookeeper's loop (its events channel closed)", ended)
	if err := l.Lock(); !errors.Is(err, zk.ErrConnectionClosed) && !errors.Is(err, zk.ErrClosing) {
		t.Fatalf("Lock on a closed connection: %v, want zk.ErrConnectionClosed", err)
	}
}
