package zkcompat_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/nilcheck"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zkcompat"
	"github.com/tierlock/tierlock/zklock"
)

func TestMain(m *testing.M) {
	zkcompat.SetLogger(zktest.QuietLog)
	goleak.VerifyTestMain(zktest.Wrap(m))
}

var acl = zk.WorldACL(zk.PermAll)

// Lock, Unlock, and Lock again on the same handle, as zk.Lock allows.
func TestLockUnlockLockAgain(t *testing.T) {
	c := conn(t)
	l := zkcompat.NewLock(c, zktest.Path(t), acl)
	for range 3 {
		if err := l.Lock(); err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(); err != nil {
			t.Fatal(err)
		}
	}
}

// zk.Lock's error values: Lock on a held handle is ErrDeadlock (and does
// not disturb the hold), Unlock without a hold is ErrNotLocked, twice too.
func TestErrDeadlockAndErrNotLocked(t *testing.T) {
	c := conn(t)
	l := zkcompat.NewLock(c, zktest.Path(t), acl)
	if err := l.Unlock(); !errors.Is(err, zk.ErrNotLocked) {
		t.Fatalf("Unlock before Lock = %v, want zk.ErrNotLocked", err)
	}
	if err := l.Lock(); err != nil {
		t.Fatal(err)
	}
	if err := l.Lock(); !errors.Is(err, zk.ErrDeadlock) {
		t.Fatalf("second Lock = %v, want zk.ErrDeadlock", err)
	}
	if err := l.LockWithData([]byte("x")); !errors.Is(err, zk.ErrDeadlock) {
		t.Fatalf("LockWithData on a held handle = %v, want zk.ErrDeadlock", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatalf("Unlock after the refused Locks = %v", err)
	}
	if err := l.Unlock(); !errors.Is(err, zk.ErrNotLocked) {
		t.Fatalf("second Unlock = %v, want zk.ErrNotLocked", err)
	}
}

// A second handle on the path waits until the first unlocks: what the
// first did under the lock happens before what the second does.
func TestSecondHandleWaitsForFirst(t *testing.T) {
	c := conn(t)
	p := zktest.Path(t)
	first, second := zkcompat.NewLock(c, p, acl), zkcompat.NewLock(c, p, acl)
	if err := first.Lock(); err != nil {
		t.Fatal(err)
	}
	order := make(chan int, 3)
	errc := make(chan error, 1)
	go func() {
		if err := second.LockWithData([]byte("second")); err != nil {
			errc <- err
			return
		}
		order <- 2
		errc <- second.Unlock()
	}()
	time.Sleep(100 * time.Millisecond)
	order <- 1
	if err := first.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if a, b := <-order, <-order; a != 1 || b != 2 {
		t.Fatalf("order %d, %d: the second handle got the lock while the first held it", a, b)
	}
}

// A lock path below a parent that exists already, with data of its own.
func TestPathBelowExistingParent(t *testing.T) {
	c := conn(t)
	parent := zktest.Path(t)
	for i := 1; i <= len(parent); i++ {
		if i == len(parent) || parent[i] == '/' {
			if _, err := c.Create(parent[:i], []byte{1, 2, 3}, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				t.Fatal(err)
			}
		}
	}
	l := zkcompat.NewLock(c, parent+"/lock", acl)
	if err := l.Lock(); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func TestBadInput(t *testing.T) {
	c := conn(t)
	if err := zkcompat.NewLock(c, zktest.Path(t), nil).Lock(); err != zk.ErrInvalidACL {
		t.Errorf("empty ACL: %v, want zk.ErrInvalidACL", err)
	}
	for _, p := range []string{"", "relative", "/trailing/", "/a//b", "/", "/zookeeper/x"} {
		if err := zkcompat.NewLock(c, p, acl).Lock(); err != zk.ErrInvalidPath {
			t.Errorf("path %q: %v, want zk.ErrInvalidPath", p, err)
		}
	}
	if err := zkcompat.NewLock(nil, "/x", acl).Lock(); err == nil {
		t.Error("nil connection: no error")
	}
	var nilLock *zkcompat.Lock
	if err := nilLock.Unlock(); !errors.Is(err, zk.ErrNotLocked) {
		t.Errorf("nil handle Unlock: %v", err)
	}
	//lint:ignore SA1012 a nil context is the bad input under test
	if err := zkcompat.NewLock(c, zktest.Path(t), acl).LockContext(nil); !errors.Is(err, zklock.ErrNilContext) { //nolint:staticcheck
		t.Errorf("nil context: %v", err)
	}
}

// Sixteen handles of one process wait on one path: ZooKeeper sees at most
// one node of the process there (zk.Lock would queue sixteen), and every
// handle gets its turn.
func TestOneNodePerProcess(t *testing.T) {
	c := conn(t)
	p := zktest.Path(t)
	holder := zkcompat.NewLock(c, p, acl)
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	const n = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	inside := 0
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := zkcompat.NewLock(c, p, acl)
			for range 5 {
				if err := l.Lock(); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				inside++
				if inside != 1 {
					errs <- errors.New("two handles inside at once")
				}
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				inside--
				mu.Unlock()
				if err := l.Unlock(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond) // all sixteen are waiting now
	if kids := zktest.Children(t, c, p); len(kids) != 1 {
		t.Errorf("%d nodes on the path with 17 handles of one process: %v", len(kids), kids)
	}
	if err := holder.Unlock(); err != nil {
		t.Fatal(err)
	}
	if _, ok := zktest.Await(t, "the sixteen handles' turns", zktest.Waited(&wg)); !ok {
		t.FailNow()
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// A wait abandoned through its context returns an error wrapping the
// context's, holds nothing, its node goes (deleted in the background:
// soon after the return, not by it), and the handle can lock later.
func TestLockContextCancelled(t *testing.T) {
	c := conn(t)
	other := conn(t) // another process, as far as ZooKeeper can tell
	p := zktest.Path(t)
	holder := zk.NewLock(other, p, acl)
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	l := zkcompat.NewLock(c, p, acl)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := l.LockContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("LockContext = %v, want context.DeadlineExceeded", err)
	}
	if err := l.Unlock(); !errors.Is(err, zk.ErrNotLocked) {
		t.Fatalf("Unlock after a timed-out wait = %v, want zk.ErrNotLocked", err)
	}
	zktest.Eventually(t, 5*time.Second, "only the zk.Lock holder's node", func() bool {
		return len(zktest.Children(t, other, p)) == 1
	})
	if err := holder.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := l.Lock(); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// Lost closes when the hold is lost (here: the node deleted by someone
// else), not on Unlock; Unlock of the lost hold says so, with zk.ErrNoNode
// as zk.Lock's Unlock would, and the handle locks again.
func TestLostAndToken(t *testing.T) {
	c := conn(t)
	admin := conn(t)
	p := zktest.Path(t)
	l := zkcompat.NewLock(c, p, acl)
	if tok := l.Token(); tok != 0 {
		t.Fatalf("Token without a hold = %d", tok)
	}
	select {
	case <-l.Lost():
	default:
		t.Fatal("Lost without a hold is not closed")
	}
	if err := l.Lock(); err != nil {
		t.Fatal(err)
	}
	first := l.Token()
	if first <= 0 {
		t.Fatalf("Token = %d while held", first)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := l.Lock(); err != nil {
		t.Fatal(err)
	}
	if tok := l.Token(); tok <= first {
		t.Fatalf("Token of the next hold %d, not above %d", tok, first)
	}
	lost := l.Lost()
	select {
	case <-lost:
		t.Fatal("Lost closed while the hold is valid")
	default:
	}
	kids := zktest.Children(t, admin, p)
	if len(kids) != 1 {
		t.Fatalf("nodes %v", kids)
	}
	if err := admin.Delete(p+"/"+kids[0], -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lost:
	case <-time.After(10 * time.Second):
		t.Fatal("Lost not closed after the node was deleted")
	}
	// Issue 43, item 4: the loss was seen before Unlock (Lost closed), and
	// Unlock says what zk.Lock's would, zk.ErrNoNode (issue 49: itself).
	if err := l.Unlock(); err != zk.ErrNoNode {
		t.Fatalf("Unlock of a hold whose node another client deleted = %v, want zk.ErrNoNode", err)
	}
	if err := l.Lock(); err != nil {
		t.Fatalf("Lock after a lost hold: %v", err)
	}
	lost = l.Lost()
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lost:
		t.Fatal("Unlock closed Lost")
	default:
	}
}

// CloseConn ends holds on the connection (Lost closes) and the handles can
// lock again afterwards, on a new session.
func TestCloseConn(t *testing.T) {
	c := conn(t)
	p := zktest.Path(t)
	l := zkcompat.NewLock(c, p, acl)
	if err := l.Lock(); err != nil {
		t.Fatal(err)
	}
	zkcompat.CloseConn(c)
	select {
	case <-l.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("Lost not closed by CloseConn")
	}
	if err := l.Unlock(); err == nil {
		t.Fatal("Unlock after CloseConn reported no loss")
	}
	zktest.Eventually(t, 5*time.Second, "the closed hold's node deleted", func() bool {
		return len(zktest.Children(t, c, p)) == 0
	})
	if err := l.Lock(); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// Issue 21, item 7: on a closed connection the drop-in answers at once,
// as zk.Lock does (zk: connection closed), instead of waiting for a
// session that will never come. The connection is closed for good
// (closable: go-zookeeper's loop has ended), as in TestErrorsAreZkLocks.
func TestClosedConn(t *testing.T) {
	c, closeConn := closable(t)
	closeConn()
	l := zkcompat.NewLock(c, zktest.Path(t), acl)
	done := make(chan error, 1)
	go func() { done <- l.Lock() }()
	select {
	case err := <-done:
		if err != zk.ErrConnectionClosed {
			t.Errorf("Lock on a closed connection: %v; want zk.ErrConnectionClosed", err)
		}
	case <-time.After(3 * time.Second):
		zkcompat.CloseConn(c) // ends the wait
		zktest.Await(t, "Lock's return after CloseConn", done)
		t.Fatal("Lock on a closed connection still waiting after 3s")
	}
}

// Issue 21, item 7: methods on a nil *Lock do not panic.
func TestNilReceivers(t *testing.T) {
	nilcheck.Methods(t, (*zkcompat.Lock)(nil))
}
