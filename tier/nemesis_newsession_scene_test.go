package tier_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/nemesis"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// Loss before grant on a session made by NewSession over the caller's
// connection (issue 21, item 1). The connection was made with a 2 s
// session timeout; the session is given no timeout, or one larger than
// the granted one: its loss bounds must still come from the timeout the
// server granted.
func TestNemesisNewSession(t *testing.T) {
	zktest.TracedStep(t)
	if testing.Short() {
		t.Skip("fault scenarios")
	}
	for _, f := range []nemesis.Fault{nemesis.Partition, nemesis.Stall} {
		for _, v := range []struct {
			name string
			opts []zklock.SessionOption
		}{
			{"no-timeout", nil},
			{"larger-timeout", []zklock.SessionOption{zklock.WithSessionTimeout(10 * time.Second)}},
		} {
			t.Run(string(f)+"/"+v.name, func(t *testing.T) {
				e := nemesis.New(t, f)
				conn := rawConn(t, e.A, nemesis.Timeout)
				a, err := zklock.NewSession(conn, nil, append([]zklock.SessionOption{zklock.WithLogger(quietLog)}, v.opts...)...)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { a.Close() })
				b := connect(t, e.Others)
				obs := connect(t, e.Others)
				e.Prepare(t, conn, obs.Conn())
				ctx := ctxT(t, 60*time.Second)
				path := zktest.Path(t)
				la, lb := newLock(t, a, path), newLock(t, b, path)
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
				faultAt := e.Strike(t, conn)
				scene.Verdict(t, faultAt)
				e.Heal(t)
				_ = la.Release(held)
				la.Close()
				a.Close()
				e.Done()
			})
		}
	}
}

// rawConn is a go-zookeeper connection of the caller's, closed when the
// test ends.
func rawConn(t *testing.T, servers []string, timeout time.Duration) *zk.Conn {
	t.Helper()
	c, events, err := zk.Connect(servers, timeout, zk.WithLogInfo(false), zk.WithLogger(discard{}))
	if err != nil {
		t.Fatal(err)
	}
	ended := zktest.DrainEvents(events)
	eventually(t, 10*time.Second, "a session", func() bool { return c.State() == zk.StateHasSession })
	t.Cleanup(func() {
		c.Close()
		zktest.AwaitClosed(t, "the end of go-zookeeper's loop (its events channel closed)", ended)
	})
	return c
}

type discard struct{}

func (discard) Printf(string, ...any) {}
