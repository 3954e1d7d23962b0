package zklock_test

import (
	"context"
	"errors"
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// The fleet: see zktest.FleetACL.
const fleetUser, fleetPassword = zktest.FleetUser, zktest.FleetPassword

var fleetACL = zktest.FleetACL

func aclRoot(t *testing.T, s *zklock.Session, acl []zk.ACL) string {
	t.Helper()
	return zktest.ACLRoot(t, s.Conn(), acl)
}

// rawConn is a plain go-zookeeper connection, optionally with digest
// credentials: the stranger.
func rawConn(t *testing.T, cred string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect(zktest.Servers(t), 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	if cred != "" {
		if err := conn.AddAuth("digest", []byte(cred)); err != nil {
			t.Fatal(err)
		}
	}
	return conn
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// A client without the fleet's credentials, or with wrong ones, can read
// the queue but can neither delete the holder's node, nor queue a node of
// its own, nor write a revocation into the holder's node, nor create a
// lock path under the fleet's root; holders keep holding and waiters get
// their turn. The lock path and its parents are created by the lock with
// the ACL of WithACL (retry.go's ensureParents): with world-all parents
// the stranger's create and delete would succeed.
func TestACLKeepsStrangersOut(t *testing.T) {
	servers := zktest.Servers(t)
	a := connect(t, servers, zklock.WithDigestAuth(fleetUser, fleetPassword))
	b := connect(t, servers, zklock.WithDigestAuth(fleetUser, fleetPassword))
	root := aclRoot(t, a, fleetACL())
	lockPath := root + "/jobs/job-1" // jobs and job-1 made by the lock
	ctx := ctxT(t, 30*time.Second)

	la := newLock(t, a, lockPath, zklock.WithACL(fleetACL()))
	lb := newLock(t, b, lockPath, zklock.WithACL(fleetACL()))
	ha, err := la.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	var hb *zklock.Hold
	go func() {
		var err error
		hb, err = lb.Acquire(ctx)
		waited <- err
	}()
	eventually(t, 10*time.Second, "b queued", func() bool { return len(children(t, a.Conn(), lockPath)) == 2 })

	for _, who := range []struct{ name, cred string }{
		{"no credentials", ""},
		{"wrong password", fleetUser + ":wrong"},
		{"other user", "mallory:" + fleetPassword},
	} {
		t.Run(who.name, func(t *testing.T) {
			c := rawConn(t, who.cred)
			kids, _, err := c.Children(lockPath)
			if err != nil || len(kids) != 2 {
				t.Fatalf("stranger's listing: %v %v, want the 2 nodes", kids, err)
			}
			if _, _, err := c.Get(ha.Node()); err != nil {
				t.Fatalf("stranger cannot read the holder's data: %v", err)
			}
			if err := c.Delete(ha.Node(), -1); !errors.Is(err, zk.ErrNoAuth) {
				t.Errorf("stranger's delete of the holder's node: %v, want ErrNoAuth", err)
			}
			if n, err := c.Create(lockPath+"/_c_00000000-0000-4000-8000-000000000000-lock-", nil,
				zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
				t.Errorf("stranger's create of a lock node: %q %v, want ErrNoAuth", n, err)
			}
			if _, err := c.Set(ha.Node(), []byte("__REVOKE__"), -1); !errors.Is(err, zk.ErrNoAuth) {
				t.Errorf("stranger's revocation: %v, want ErrNoAuth", err)
			}
			if _, err := c.Create(root+"/forged", nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
				t.Errorf("stranger's create of a lock path under the root: %v, want ErrNoAuth", err)
			}
		})
	}

	select {
	case <-ha.Lost():
		t.Fatalf("holder lost its lock: %v", ha.Err())
	default:
	}
	select {
	case err := <-waited:
		t.Fatalf("waiter got the lock while the holder held it: %v", err)
	default:
	}
	if err := ha.Release(); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatalf("waiter's turn: %v", err)
	}
	if err := hb.Release(); err != nil {
		t.Fatal(err)
	}
	acl, _, err := a.Conn().GetACL(path.Dir(lockPath))
	if err != nil || len(acl) != 2 {
		t.Fatalf("parent made by the lock has ACL %v (%v), want the fleet's", acl, err)
	}
}

// A tierlock session with the wrong password is refused at once (ErrNoAuth
// is not retried) and leaves nothing behind.
func TestACLWrongCredentialsRefused(t *testing.T) {
	servers := zktest.Servers(t)
	a := connect(t, servers, zklock.WithDigestAuth(fleetUser, fleetPassword))
	root := aclRoot(t, a, fleetACL())
	lockPath := root + "/job"
	ctx := ctxT(t, 20*time.Second)

	// The lock path exists (made by the fleet): the refusal is the queue's.
	la := newLock(t, a, lockPath, zklock.WithACL(fleetACL()))
	if _, err := la.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	bad := connect(t, servers, zklock.WithDigestAuth(fleetUser, "wrong"))
	lb := newLock(t, bad, lockPath, zklock.WithACL(fleetACL()))
	if h, ok, err := lb.TryAcquire(ctx); ok || h != nil || !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("TryAcquire with the wrong password: %v %v, want ErrNoAuth", ok, err)
	}
	if _, err := lb.Acquire(ctx); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("Acquire with the wrong password: %v, want ErrNoAuth", err)
	}
	if got := children(t, a.Conn(), lockPath); len(got) != 1 {
		t.Fatalf("queue after the refusals: %v, want the holder only", got)
	}
	// A path not yet made: the refusal is the root's.
	lc := newLock(t, bad, root+"/other", zklock.WithACL(fleetACL()))
	if _, err := lc.Acquire(ctx); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("Acquire under the root with the wrong password: %v, want ErrNoAuth", err)
	}
}

// The credentials are in place before the first lock request, under both
// Connect and NewSession: a node created with zk.AuthACL (the creator's
// authenticated identities) is refused (ErrInvalidACL) on an anonymous
// connection, so an acquisition sent ahead of the auth fails. Under
// NewSession the auth is sent in the background: without enqueue's
// awaitAuth the first create races it.
func TestDigestAuthBeforeFirstRequest(t *testing.T) {
	servers := zktest.Servers(t)
	ctx := ctxT(t, 20*time.Second)
	check := func(t *testing.T, s *zklock.Session) {
		l := newLock(t, s, zktest.Path(t), zklock.WithACL(zk.AuthACL(zk.PermAll)))
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Fatalf("first acquisition: %v", err)
		}
		acl, _, err := s.Conn().GetACL(h.Node())
		if err != nil || len(acl) != 1 || acl[0].Scheme != "digest" || acl[0].ID[:len(fleetUser)+1] != fleetUser+":" {
			t.Fatalf("node ACL %v (%v), want the fleet's digest", acl, err)
		}
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("Connect", func(t *testing.T) {
		for range 5 {
			check(t, connect(t, servers, zklock.WithDigestAuth(fleetUser, fleetPassword)))
		}
	})
	t.Run("NewSession", func(t *testing.T) {
		for range 5 {
			conn, events, err := zk.Connect(servers, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
			if err != nil {
				t.Fatal(err)
			}
			s, err := zklock.NewSession(conn, events, zklock.WithTestHooks(), zklock.WithLogger(quietLog),
				zklock.WithSessionTimeout(4*time.Second), zklock.WithDigestAuth(fleetUser, fleetPassword))
			if err != nil {
				t.Fatal(err)
			}
			check(t, s)
			s.Close()
			conn.Close()
		}
	})
}

// Across a dropped connection (same session, new connection: ZooKeeper
// keeps credentials per connection) the authorised client still creates
// and deletes under the fleet's ACL: go-zookeeper re-sends the credentials
// before anything else on the new connection.
func TestDigestAuthSurvivesReconnect(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a drop and a reconnection, about 4 s")
	}
	servers := zktest.Servers(t)
	p := proxyTo(t, servers[0])
	s := connect(t, []string{p.Addr()}, zklock.WithDigestAuth(fleetUser, fleetPassword))
	root := aclRoot(t, s, fleetACL())
	ctx := ctxT(t, 30*time.Second)
	stranger := rawConn(t, "")
	for i := range 3 {
		l := newLock(t, s, root+"/job", zklock.WithACL(fleetACL()))
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Fatalf("round %d: acquire: %v", i, err)
		}
		id := s.SessionID()
		p.DropAll()
		select {
		case <-h.Lost(): // the default policy: a disconnection ends the hold
		case <-ctx.Done():
			t.Fatalf("round %d: hold survived the drop", i)
		}
		eventually(t, 10*time.Second, "reconnected", func() bool { return s.State() == zklock.StateConnected })
		if s.SessionID() != id {
			t.Fatalf("round %d: session changed; the test wants a reconnect into the same session", i)
		}
		h, err = l.Acquire(ctx)
		if err != nil {
			t.Fatalf("round %d: acquire after the reconnect: %v", i, err)
		}
		if err := h.Release(); err != nil {
			t.Fatalf("round %d: release after the reconnect: %v", i, err)
		}
		eventually(t, 10*time.Second, "node deleted", func() bool {
			return len(children(t, stranger, root+"/job")) == 0
		})
		l.Close()
	}
}

// WithDigestAuth refuses a user it cannot send.
func TestDigestAuthBadUser(t *testing.T) {
	for _, user := range []string{"", "a:b"} {
		_, err := zklock.Connect(context.Background(), zktest.Servers(t), zklock.WithTestHooks(), zklock.WithDigestAuth(user, "pw"))
		if !errors.Is(err, zklock.ErrInvalidOption) {
			t.Errorf("user %q: %v, want ErrInvalidOption", user, err)
		}
	}
}

// Issue 21, item 10: revocation requests wait for the session's
// credentials, as lock requests do: under NewSession they are sent in the
// background, and a request that overtakes them is made anonymously.
func TestRevokeWaitsForCredentials(t *testing.T) {
	servers := zktest.Servers(t)
	fleet := connect(t, servers, zklock.WithDigestAuth(fleetUser, fleetPassword))
	root := aclRoot(t, fleet, fleetACL())
	l := newLock(t, fleet, root+"/job", zklock.WithACL(fleetACL()), zklock.WithRevocable())
	ctx := ctxT(t, 20*time.Second)
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	node := h.Node() // the fleet's: the world may read it, not write it
	s := lateCredentialsSession(t, servers)
	if err := zklock.RevokeNode(ctx, s, node); err != nil {
		t.Fatalf("RevokeNode right after NewSession with credentials: %v", err)
	}
	select {
	case <-h.Revoked():
	case <-time.After(5 * time.Second):
		t.Fatal("the holder never heard of the revocation")
	}
}

// TestAcquireWaitsForCredentials: under NewSession the credentials are
// sent in the background, and an Acquire made at once, under a lock ACL
// that only they satisfy, waits for them (its create is admitted after
// them, Flight.Admit): made anonymously, its create would be refused
// zk.ErrNoAuth.
func TestAcquireWaitsForCredentials(t *testing.T) {
	servers := zktest.Servers(t)
	fleet := connect(t, servers, zklock.WithDigestAuth(fleetUser, fleetPassword))
	root := aclRoot(t, fleet, digestOnlyACL())
	s := lateCredentialsSession(t, servers)
	h, err := newLock(t, s, root+"/job", zklock.WithACL(digestOnlyACL())).Acquire(ctxT(t, 20*time.Second))
	if err != nil {
		t.Fatalf("Acquire right after NewSession with credentials: %v", err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
}

// lateCredentialsSession is a NewSession over a caller's connection with
// the fleet's credentials, whose sending (in the background, as under
// NewSession) is delayed 300 ms: a request made at once meets them not yet
// in place. Both are closed when t ends.
func lateCredentialsSession(t *testing.T, servers []string) *zklock.Session {
	t.Helper()
	t.Cleanup(zklock.SetAuthDelayForTest(300 * time.Millisecond))
	conn, _, err := zk.Connect(servers, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	s, err := zklock.NewSession(conn, nil, zklock.WithTestHooks(), zklock.WithLogger(quietLog), zklock.WithDigestAuth(fleetUser, fleetPassword))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
