package zkcompat_test

import (
	"context"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/nemesis"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zkcompat"
)

// Loss before grant through the drop-in (issue 21, item 1): A's
// connection is the caller's, made by zk.Connect with a 2 s session
// timeout, and the drop-in's session must derive its loss bounds from the
// timeout the server granted, whatever it was told. Under a follower cut
// from its leader, or writes that block while the server's bytes flow, A
// must hear of the loss before B is granted the lock.
func TestNemesis(t *testing.T) {
	if testing.Short() {
		t.Skip("fault scenarios")
	}
	for _, f := range []nemesis.Fault{nemesis.Partition, nemesis.Stall} {
		t.Run(string(f), func(t *testing.T) {
			e := nemesis.New(t, f)
			a := connTo(t, e.A, nemesis.Timeout)
			b := connTo(t, e.Others, 4*time.Second)
			obs := connTo(t, e.Others, 4*time.Second)
			e.Prepare(t, a, obs)
			ctx := zktest.Context(t, 60*time.Second)
			path := zktest.Path(t)
			la, lb := zkcompat.NewLock(a, path, acl), zkcompat.NewLock(b, path, acl)
			if err := la.LockContext(ctx); err != nil {
				t.Fatal(err)
			}
			kids := nemesis.Queue(t, obs, path)
			if len(kids) != 1 {
				t.Fatalf("A holds, queue %v", kids)
			}
			scene := nemesis.Watch(t, ctx, obs, path+"/"+kids[0],
				nemesis.Holder{Lost: la.Lost(), Token: la.Token()},
				func(ctx context.Context) (int64, func() error, error) {
					err := lb.LockContext(ctx)
					return lb.Token(), lb.Unlock, err
				})
			zktest.Eventually(t, 10*time.Second, "B queued behind A", func() bool { return len(nemesis.Queue(t, obs, path)) == 2 })
			faultAt := e.Strike(t, a)
			scene.Verdict(t, faultAt)
			e.Heal(t)
			_ = la.Unlock()
			zkcompat.CloseConn(a)
			zkcompat.CloseConn(b)
			e.Done()
		})
	}
}
