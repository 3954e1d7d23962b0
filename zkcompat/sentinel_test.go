package zkcompat_test

import (
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zkcompat"
)

// zkSentinels are go-zookeeper's error values, which code written against
// zk.Lock compares with ==.
var zkSentinels = []error{
	zk.ErrNoServer, zk.ErrInvalidPath, zk.ErrConnectionClosed, zk.ErrUnknown, zk.ErrAPIError, zk.ErrNoNode,
	zk.ErrNoAuth, zk.ErrBadVersion, zk.ErrNoChildrenForEphemerals, zk.ErrNodeExists, zk.ErrNotEmpty,
	zk.ErrSessionExpired, zk.ErrInvalidACL, zk.ErrInvalidFlags, zk.ErrAuthFailed, zk.ErrClosing, zk.ErrNothing,
	zk.ErrSessionMoved, zk.ErrReconfigDisabled, zk.ErrBadArguments, zk.ErrDeadlock, zk.ErrNotLocked,
	zk.ErrUnhandledFieldType, zk.ErrPtrExpected, zk.ErrShortBuffer,
}

// sentinel returns the go-zookeeper sentinel err is (==), or nil.
func sentinel(err error) error {
	for _, s := range zkSentinels {
		if err == s {
			return s
		}
	}
	return nil
}

// Issue 49, item 4: zkcompat fails as zk.Lock does, to ==. zk.Lock returns
// go-zookeeper's sentinels themselves, and code written against it tests
// err == zk.ErrNoNode; the drop-in returned some of them wrapped (Unlock of
// a node someone else deleted, an invalid path, an empty ACL), for which
// errors.Is held and == did not. Each case runs on zk.Lock and on the
// drop-in, side by side: where zk.Lock returns a sentinel (the test checks
// that it does), the drop-in must return that same value.
func TestErrorsAreZkLocks(t *testing.T) {
	type env struct {
		c, admin *zk.Conn
		path     string
		newLock  func(c *zk.Conn, p string, acl []zk.ACL) locker
	}
	cases := []struct {
		name string
		want error // what zk.Lock returns
		run  func(t *testing.T, e env) error
	}{
		{"unlock of a node someone else deleted", zk.ErrNoNode, func(t *testing.T, e env) error {
			l := e.newLock(e.c, e.path, acl)
			if err := l.Lock(); err != nil {
				t.Fatal(err)
			}
			for _, k := range zktest.Children(t, e.admin, e.path) {
				if err := e.admin.Delete(e.path+"/"+k, -1); err != nil {
					t.Fatal(err)
				}
			}
			return l.Unlock()
		}},
		{"relative path", zk.ErrInvalidPath, func(t *testing.T, e env) error { return e.newLock(e.c, "relative", acl).Lock() }},
		{"path with a trailing slash", zk.ErrInvalidPath, func(t *testing.T, e env) error { return e.newLock(e.c, e.path+"/", acl).Lock() }},
		{"path with an empty segment", zk.ErrInvalidPath, func(t *testing.T, e env) error { return e.newLock(e.c, e.path+"//x", acl).Lock() }},
		{"the root", zk.ErrInvalidPath, func(t *testing.T, e env) error { return e.newLock(e.c, "/", acl).Lock() }},
		{"empty ACL", zk.ErrInvalidACL, func(t *testing.T, e env) error { return e.newLock(e.c, e.path, nil).Lock() }},
		{"unlock without lock", zk.ErrNotLocked, func(t *testing.T, e env) error { return e.newLock(e.c, e.path, acl).Unlock() }},
		{"lock twice", zk.ErrDeadlock, func(t *testing.T, e env) error {
			l := e.newLock(e.c, e.path, acl)
			if err := l.Lock(); err != nil {
				t.Fatal(err)
			}
			defer l.Unlock()
			return l.Lock()
		}},
		// The connection is closed for good: Close returned and
		// go-zookeeper's loop ended (closable), so nothing is written on it.
		// Locking while the loop ends can hang go-zookeeper's loop, zk.Lock
		// as well (see closable).
		{"closed connection", zk.ErrConnectionClosed, func(t *testing.T, e env) error {
			c, closeConn := closable(t)
			closeConn()
			return e.newLock(c, e.path, acl).Lock()
		}},
		{"unlock on a closed connection", zk.ErrConnectionClosed, func(t *testing.T, e env) error {
			c, closeConn := closable(t)
			l := e.newLock(c, e.path, acl)
			if err := l.Lock(); err != nil {
				t.Fatal(err)
			}
			closeConn()
			return l.Unlock()
		}},
	}
	c, admin := conn(t), conn(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got [2]error
			for i, im := range []func(c *zk.Conn, p string, acl []zk.ACL) locker{
				func(c *zk.Conn, p string, acl []zk.ACL) locker { return zk.NewLock(c, p, acl) },
				func(c *zk.Conn, p string, acl []zk.ACL) locker { return zkcompat.NewLock(c, p, acl) },
			} {
				got[i] = tc.run(t, env{c: c, admin: admin, path: zktest.Path(t), newLock: im})
			}
			t.Logf("zk.Lock: %v; zkcompat: %v", got[0], got[1])
			if got[0] != tc.want {
				t.Fatalf("zk.Lock returned %v, not %v (the premise of the case)", got[0], tc.want)
			}
			if s := sentinel(got[1]); s != got[0] {
				t.Errorf("zkcompat returned %q, not go-zookeeper's %q itself: err == %s does not hold", got[1], got[0], varName(got[0]))
			}
		})
	}
}

// varName names a go-zookeeper sentinel, for the failure message.
func varName(err error) string {
	switch err {
	case zk.ErrNoNode:
		return "zk.ErrNoNode"
	case zk.ErrInvalidPath:
		return "zk.ErrInvalidPath"
	case zk.ErrInvalidACL:
		return "zk.ErrInvalidACL"
	case zk.ErrConnectionClosed:
		return "zk.ErrConnectionClosed"
	case zk.ErrNotLocked:
		return "zk.ErrNotLocked"
	case zk.ErrDeadlock:
		return "zk.ErrDeadlock"
	}
	return "the sentinel"
}
