package zklock_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

func proxyTo(t *testing.T, target string) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// A holder whose traffic stops is told it may have lost the lock before
// the server expires its session and the next waiter gets the lock: under
// the default policy when its lease lapses (a quarter of the session
// timeout after its last confirmed write or sync) or it sees the disconnection,
// whichever comes first. Under WithLossOnExpiryOnly a short disconnection
// leaves the hold alone, and a long one ends it by the local timer at most
// an eighth of the session timeout after the next holder got the lock
// (before it, in practice). Release then says the lock was lost, and the
// lock works again on the session's new session.
func TestHolderSessionExpiry(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waits out a holder's session expiry, about 9 s")
	}
	const timeout = 2 * time.Second
	for _, expiryOnly := range []bool{false, true} {
		name := map[bool]string{false: "LoseOnDisconnect", true: "LoseOnExpiryOnly"}[expiryOnly]
		t.Run(name, func(t *testing.T) {
			servers := zktest.Servers(t)
			px := proxyTo(t, servers[0])
			opts := []zklock.SessionOption{zklock.WithSessionTimeout(timeout)}
			if expiryOnly {
				opts = append(opts, zklock.WithLossOnExpiryOnly())
			}
			hs := connect(t, []string{px.Addr()}, opts...)
			p := zktest.Path(t)
			holder := newLock(t, hs, p)
			waiter := newLock(t, connect(t, servers), p)
			ctx := ctxT(t, 30*time.Second)
			hold, err := holder.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			lost := hold.Lost()
			if expiryOnly {
				// A dropped connection, re-established at once on the same
				// session, does not end the hold.
				changed := make(chan struct{})
				go func() {
					for hs.State() == zklock.StateConnected {
						time.Sleep(time.Millisecond)
					}
					for hs.State() != zklock.StateConnected {
						time.Sleep(time.Millisecond)
					}
					close(changed)
				}()
				px.DropAll()
				select {
				case <-changed:
				case <-ctx.Done():
					t.Fatal("no reconnection after the drop")
				}
				select {
				case <-lost:
					t.Fatalf("hold lost on a short disconnection under WithLossOnExpiryOnly: %v", hold.Err())
				default:
				}
			}
			acquired := make(chan time.Time, 1)
			var wh *zklock.Hold
			go func() {
				var err error
				if wh, err = waiter.Acquire(ctx); err != nil {
					t.Error(err)
				}
				acquired <- time.Now()
			}()
			eventually(t, 5*time.Second, "waiter queued", func() bool { return len(children(t, waiter.Session().Conn(), p)) == 2 })

			px.Pause()
			var lostAt, at time.Time
			select {
			case <-lost:
				lostAt = time.Now()
				at = <-acquired
			case at = <-acquired:
				<-lost
				lostAt = time.Now()
			case <-ctx.Done():
				t.Fatal("neither loss nor hand-over")
			}
			t.Logf("holder told %v before the waiter acquired", at.Sub(lostAt))
			if !expiryOnly && !lostAt.Before(at) {
				t.Fatalf("holder told at %v, waiter acquired at %v", lostAt, at)
			}
			if expiryOnly && lostAt.Sub(at) > timeout/8 {
				t.Fatalf("holder told %v after the waiter acquired: more than an eighth of the session timeout", lostAt.Sub(at))
			}
			px.Resume()
			err = hold.Release()
			if !errors.Is(err, zklock.ErrLockLost) {
				t.Fatalf("Release after loss: %v, want ErrLockLost", err)
			}
			if !errors.Is(err, zklock.ErrLeaseExpired) && !errors.Is(err, zklock.ErrDisconnected) && !errors.Is(err, zklock.ErrSessionExpired) {
				t.Fatalf("Release after loss: %v, want cause ErrLeaseExpired, ErrDisconnected or ErrSessionExpired", err)
			}
			if expiryOnly && errors.Is(err, zklock.ErrDisconnected) {
				t.Fatalf("Release after loss: %v: a disconnection ended the hold under WithLossOnExpiryOnly", err)
			}
			if err := wh.Release(); err != nil {
				t.Fatal(err)
			}
			// The holder's lock works again on the session's new session.
			again, err := holder.Acquire(ctx)
			if err != nil {
				t.Fatalf("Acquire after expiry: %v", err)
			}
			if err := again.Release(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Someone deleting the holder's node ends the hold. (A hold that is not
// revocable arms its own-node watch once it has lasted the lease's bound,
// 1 s here: the loss is noticed then, well within ctx.)
func TestNodeDeletedByOther(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	l := newLock(t, s, zktest.Path(t))
	ctx := ctxT(t, 10*time.Second)
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	admin := connect(t, zktest.Servers(t))
	if err := admin.Conn().Delete(h.Node(), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Lost():
	case <-ctx.Done():
		t.Fatal("Lost not closed after the node was deleted")
	}
	if err := h.Release(); !errors.Is(err, zklock.ErrNodeDeleted) {
		t.Fatalf("Release: %v, want ErrNodeDeleted", err)
	}
}

// createSize is the size on the wire of the create request Acquire sends.
func createSize(lockPath string, label string) int {
	host, _ := os.Hostname()
	data, _ := json.Marshal(struct {
		Host  string `json:"host"`
		Pid   int    `json:"pid"`
		Label string `json:"label,omitempty"`
	}{host, os.Getpid(), label})
	name := lockPath + "/_c_" + "00000000-0000-0000-0000-000000000000" + "-lock-"
	acl := 4 + (4 + 4 + len("world") + 4 + len("anyone"))
	return 4 + 8 + (4 + len(name)) + (4 + len(data)) + acl + 4
}

// The connection drops right after the create is sent, before its reply:
// the server made the node, and Acquire must find it by its GUID rather
// than leave it behind as an orphan that would block the queue.
func TestDropAfterCreate(t *testing.T) {
	px, l, admin := dropScene(t)
	p := l.Path()
	_, before, err := admin.Conn().Get(p)
	if err != nil {
		t.Fatal(err)
	}
	px.DropAfter(createSize(p, ""))
	h, err := l.Acquire(ctxT(t, 20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if st := px.Stats(); st.Dropped == 0 {
		t.Fatalf("proxy dropped nothing: %+v", st)
	}
	var nodes []string
	for _, c := range children(t, admin.Conn(), p) {
		if c != "keep" {
			nodes = append(nodes, c)
		}
	}
	if len(nodes) != 1 || nodes[0] != path.Base(h.Node()) {
		t.Fatalf("nodes %v, holder %s: an orphan was left", nodes, h.Node())
	}
	// The server numbers children by the parent's cversion: the first
	// create got exactly that number, a second one would have the next.
	if seq, _ := zklock.ParseSequence(nodes[0]); seq != before.Cversion {
		t.Fatalf("holder's node has sequence %d: the first create was not recovered", seq)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
}

// dropScene is a lock whose session goes through a proxy, and a session
// of its own (admin) on the server; a persistent child keeps the container
// lock path alive.
func dropScene(t *testing.T) (*faultproxy.Proxy, *zklock.Lock, *zklock.Session) {
	servers := zktest.Servers(t)
	px := proxyTo(t, servers[0])
	p := zktest.Path(t)
	admin := connect(t, servers)
	if err := zkCreateAll(admin.Conn(), p+"/keep"); err != nil {
		t.Fatal(err)
	}
	return px, newLock(t, connect(t, []string{px.Addr()}), p), admin
}

func zkCreateAll(conn *zk.Conn, p string) error {
	if p == "/" {
		return nil
	}
	if err := zkCreateAll(conn, path.Dir(p)); err != nil {
		return err
	}
	_, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
	if errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	return err
}

// A server restart while sessions wait: every waiter still acquires, in
// order, with never two holders. The order is a session's: the sessions
// must outlive the restart, the server's start and the clients'
// reconnection. With 4-s sessions a loaded make test (four packages at a
// time beside a busy core) granted [2 1 0]: a session that expires loses
// its place. 10 s is the margin.
func TestServerRestartWhileWaiting(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: restarts a private ensemble's server, about 3 s")
	}
	c := zktest.Ensemble(t, 1)
	servers := c.Addrs()
	p := "/restart/lock"
	ctx := ctxT(t, 60*time.Second)
	opts := []zklock.SessionOption{zklock.WithSessionTimeout(10 * time.Second)}
	holder := newLock(t, connect(t, servers, opts...), p, zklock.WithRecheckInterval(time.Second))
	hh, err := holder.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	var mu sync.Mutex
	var order []int
	inside := 0
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		l := newLock(t, connect(t, servers, opts...), p, zklock.WithRecheckInterval(time.Second))
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := l.Acquire(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			inside++
			if inside != 1 {
				t.Errorf("%d holders at once", inside)
			}
			order = append(order, i)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			inside--
			mu.Unlock()
			if err := h.Release(); err != nil {
				t.Error(err)
			}
		}()
		eventually(t, 5*time.Second, "queued", func() bool { return len(children(t, holder.Session().Conn(), p)) == i+2 })
	}
	if err := c.Kill(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	// Under the default policy the disconnection ended the hold.
	select {
	case <-hh.Lost():
	case <-ctx.Done():
		t.Fatal("holder not told of the disconnection")
	}
	if err := hh.Release(); !errors.Is(err, zklock.ErrLockLost) {
		t.Fatalf("holder Release: %v", err)
	}
	zktest.Wait(t, "the waiters", &wg)
	for i, v := range order {
		if v != i {
			t.Fatalf("granted out of order after restart: %v", order)
		}
	}
	if len(order) != n {
		t.Fatalf("only %v acquired", order)
	}
}

// Permanent errors come back at once, not retried until the deadline: a
// lock path the session may not write to answers ErrNoAuth.
func TestPermanentErrorNotRetried(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	p := zktest.Path(t)
	if err := zkCreateAll(s.Conn(), path.Dir(p)); err != nil {
		t.Fatal(err)
	}
	// Readable by all, writable by nobody.
	if _, err := s.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermRead)); err != nil {
		t.Fatal(err)
	}
	l := newLock(t, s, p)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := l.Acquire(ctx)
	if !errors.Is(err, zk.ErrNoAuth) || h != nil {
		t.Fatalf("Acquire under a read-only node: %v, want zk.ErrNoAuth", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Acquire retried a permanent error until its deadline")
	}
}

// A released node's delete outlives an outage longer than twice the
// session timeout when the session survives it: ZooKeeper gives every
// session a fresh timeout when a server takes over (a restart here, a new
// leader in an ensemble). The delete used to give up after 2T without a
// session, leaving the node of a live session first in the queue for that
// session's life: the stress soak's "leader" fault, after which no worker
// acquired again.
func TestDeleteOutlivesLongOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a private ensemble through an outage, about 10 s")
	}
	c := zktest.Ensemble(t, 1)
	servers := c.Addrs()
	p := "/outage/lock"
	ctx := ctxT(t, 60*time.Second)
	const timeout = 3 * time.Second
	s := connect(t, servers, zklock.WithSessionTimeout(timeout))
	h, err := newLock(t, s, p).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id := s.SessionID()
	if err := c.Stop(0); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the connection down", func() bool { return s.Conn().State() != zk.StateHasSession })
	_ = h.Release() // lost already, most likely: the node must go all the same
	time.Sleep(2*timeout + time.Second)
	if err := c.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the session back", func() bool { return s.Conn().State() == zk.StateHasSession })
	if got := s.SessionID(); got != id {
		t.Fatalf("the session did not survive the outage (%#x, then %#x): the test needs it to", id, got)
	}
	obs := connect(t, servers).Conn()
	eventually(t, 10*time.Second, "the released node deleted", func() bool { return len(children(t, obs, p)) == 0 })
}

// The same drop, with the caller's ctx ending as the create fails: the
// node the server made must still be found and deleted. Acquire used to
// return the create's error when ctx had ended, with no search for the
// node, and the node, of a session that lives on, stayed first in the
// queue for the session's life.
func TestDropAfterCreateThenCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a drop after a create, about 8 s")
	}
	px, l, admin := dropScene(t)
	s, p := l.Session(), l.Path()
	defer zklock.SetCreatedHookForTest(nil)
	for round := range 6 {
		eventually(t, 10*time.Second, "connected", func() bool { return s.Conn().State() == zk.StateHasSession })
		ctx, cancel := context.WithCancel(context.Background())
		zklock.SetCreatedHookForTest(cancel) // the create failed (the drop): the caller gives up now
		px.DropAfter(createSize(p, ""))
		h, err := l.Acquire(ctx)
		zklock.SetCreatedHookForTest(nil)
		cancel()
		if err == nil {
			_ = h.Release()
			t.Fatalf("round %d: Acquire succeeded although its ctx ended with the create", round)
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("round %d: Acquire: %v, want context.Canceled", round, err)
		}
		eventually(t, 10*time.Second, "no node of ours left", func() bool { return len(children(t, admin.Conn(), p)) == 1 })
	}
}
