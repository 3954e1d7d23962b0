package tier_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/nemesis"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// TestNemesisDigestACL: loss before grant, each party holding the fleet's
// credentials and the lock path under an ACL that lets only the fleet's
// identity read or write. A's session reconnects (a dropped connection) or
// stalls; every request of its own on a new connection goes after
// go-zookeeper's re-sent credentials, so none is refused zk.ErrNoAuth, and
// the scene is judged as the others: A told before B is granted.
func TestNemesisDigestACL(t *testing.T) {
	zktest.TracedStep(t)
	if testing.Short() {
		t.Skip("fault scenarios")
	}
	auth := zklock.WithDigestAuth(zktest.FleetUser, zktest.FleetPassword)
	acl := zk.DigestACL(zk.PermAll, zktest.FleetUser, zktest.FleetPassword)
	for _, f := range []nemesis.Fault{nemesis.Drop, nemesis.Stall} {
		t.Run(string(f), func(t *testing.T) {
			e := nemesis.New(t, f)
			a := connect(t, e.A, auth, zklock.WithSessionTimeout(nemesis.Timeout))
			b := connect(t, e.Others, auth)
			obs := connect(t, e.Others, auth)
			e.Prepare(t, a.Conn(), obs.Conn())
			ctx := ctxT(t, 60*time.Second)
			path := zktest.ACLRoot(t, obs.Conn(), acl) + "/job"
			opt := tier.WithLockOptions(zklock.WithACL(acl))
			la, lb := newLock(t, a, path, opt), newLock(t, b, path, opt)
			held, err := la.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			tokA, _ := la.Token(held)
			kids := nemesis.Queue(t, obs.Conn(), path)
			if len(kids) != 1 {
				t.Fatalf("A holds, queue %v", kids)
			}
			scene := nemesis.Watch(t, ctx, obs.Conn(), path+"/"+kids[0],
				nemesis.Holder{Lost: held.Done(), Cause: func() error { return context.Cause(held) }, Token: tokA},
				func(ctx context.Context) (int64, func() error, error) {
					h, err := lb.Acquire(ctx)
					if err != nil {
						return 0, nil, err
					}
					tok, _ := lb.Token(h)
					return tok, func() error { return lb.Release(h) }, nil
				})
			zktest.Eventually(t, 10*time.Second, "B queued behind A", func() bool { return len(nemesis.Queue(t, obs.Conn(), path)) == 2 })
			faultAt := e.Strike(t, a.Conn())
			scene.Verdict(t, faultAt)
			e.Heal(t)
			_ = la.Release(held)
			la.Close()
			e.Done()
		})
	}
}
