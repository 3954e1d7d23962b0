package tier_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/nemesis"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// The nemesis faults that hide a loss from the client (issue 21): a
// follower cut from its leader and blocked writes, against every recipe.
// A holds (a write with a read riding on it; both leases of a semaphore;
// a multi-lock set), B waits for the same, the fault strikes A: A must be
// told before its node is gone and before B is granted (internal/nemesis
// judges the order), and B's token must exceed A's.

// recipe is one recipe's side of a scene: A's hold and B's acquisition,
// with the path whose queue shows B waiting behind A.
type recipe struct {
	name  string
	queue func(root string) string // the path where A's node and B's wait
	hold  func(t *testing.T, ctx context.Context, a *zklock.Session, root string) (context.Context, int64)
	grant func(t *testing.T, b *zklock.Session, root string) nemesis.Grant
}

var recipes = []recipe{
	{"rw", func(root string) string { return root },
		func(t *testing.T, ctx context.Context, a *zklock.Session, root string) (context.Context, int64) {
			rw := newRW(t, a, root)
			w, err := rw.Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			tok, _ := rw.Token(w)
			r, err := rw.RLock(w) // a read riding on the write node must be told too
			if err != nil {
				t.Fatal(err)
			}
			return r, tok
		},
		func(t *testing.T, b *zklock.Session, root string) nemesis.Grant {
			rw := newRW(t, b, root)
			return func(ctx context.Context) (int64, func() error, error) {
				h, err := rw.Lock(ctx)
				if err != nil {
					return 0, nil, err
				}
				tok, _ := rw.Token(h)
				return tok, func() error { return rw.Release(h) }, nil
			}
		}},
	{"semaphore", func(root string) string { return root + "/leases" },
		func(t *testing.T, ctx context.Context, a *zklock.Session, root string) (context.Context, int64) {
			sem := newSem(t, a, root, 1)
			h, err := sem.Acquire(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			tok, _ := sem.Token(h)
			return h, tok
		},
		func(t *testing.T, b *zklock.Session, root string) nemesis.Grant {
			sem := newSem(t, b, root, 1)
			return func(ctx context.Context) (int64, func() error, error) {
				h, err := sem.Acquire(ctx, 1)
				if err != nil {
					return 0, nil, err
				}
				tok, _ := sem.Token(h)
				return tok, func() error { return sem.Release(h) }, nil
			}
		}},
	{"multilock", func(root string) string { return root + "/x" },
		func(t *testing.T, ctx context.Context, a *zklock.Session, root string) (context.Context, int64) {
			m := newMulti(t, newLock(t, a, root+"/x"), newLock(t, a, root+"/y"))
			h, err := m.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			toks, _ := m.Tokens(h)
			return h, toks[root+"/x"]
		},
		func(t *testing.T, b *zklock.Session, root string) nemesis.Grant {
			m := newMulti(t, newLock(t, b, root+"/y"), newLock(t, b, root+"/x"))
			return func(ctx context.Context) (int64, func() error, error) {
				h, err := m.Acquire(ctx)
				if err != nil {
					return 0, nil, err
				}
				toks, _ := m.Tokens(h)
				return toks[root+"/x"], func() error { return m.Release(h) }, nil
			}
		}},
}

func TestRecipeNemesis(t *testing.T) {
	zktest.TracedStep(t)
	if testing.Short() {
		t.Skip("fault scenarios")
	}
	for _, f := range []nemesis.Fault{nemesis.Partition, nemesis.Stall} {
		for _, r := range recipes {
			t.Run(string(f)+"/"+r.name, func(t *testing.T) {
				e := nemesis.New(t, f)
				a := connect(t, e.A, zklock.WithSessionTimeout(nemesis.Timeout))
				b, obs := connect(t, e.Others), connect(t, e.Others)
				e.Prepare(t, a.Conn(), obs.Conn())
				ctx := ctxT(t, 60*time.Second)
				root := zktest.Path(t)
				held, tok := r.hold(t, ctx, a, root)
				q := r.queue(root)
				kids := nemesis.Queue(t, obs.Conn(), q)
				if len(kids) != 1 {
					t.Fatalf("A holds, queue %v", kids)
				}
				scene := nemesis.Watch(t, ctx, obs.Conn(), q+"/"+kids[0],
					nemesis.Holder{Lost: held.Done(), Cause: func() error { return context.Cause(held) }, Token: tok},
					r.grant(t, b, root))
				zktest.Eventually(t, 10*time.Second, "B queued behind A", func() bool { return len(nemesis.Queue(t, obs.Conn(), q)) == 2 })
				faultAt := e.Strike(t, a.Conn())
				scene.Verdict(t, faultAt)
				e.Heal(t)
				a.Close()
				e.Done()
			})
		}
	}
}

// The flood against every recipe: A's session has many acquisitions
// queued behind B's holds when it expires, while A's state listener is
// slow on the expiry. Every one of A's waits must end within the bound (a
// grant in the new session, or an error), no node may be left, and a fresh
// acquisition must hold afterwards.
func TestRecipeFlood(t *testing.T) {
	zktest.TracedStep(t)
	if testing.Short() {
		t.Skip("fault scenarios")
	}
	const n = 40
	for _, r := range recipes {
		t.Run(r.name, func(t *testing.T) {
			servers := zktest.Servers(t)
			px := nemesis.NewProxy(t, servers[0])
			var once sync.Once
			expired := make(chan struct{})
			a := connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(nemesis.Timeout),
				zklock.WithStateListener(func(st zklock.State) {
					if st == zklock.StateExpired {
						once.Do(func() { close(expired); time.Sleep(time.Second) })
					}
				}))
			b, obs := connect(t, servers), connect(t, servers)
			ctx := ctxT(t, 90*time.Second)
			base := zktest.Path(t)
			releases := make([]func() error, n)
			waits := make([]nemesis.Grant, n)
			for i := range n {
				root := fmt.Sprintf("%s/p%d", base, i)
				_, rel, err := r.grant(t, b, root)(ctx) // B holds
				if err != nil {
					t.Fatal(err)
				}
				releases[i] = rel
				waits[i] = r.grant(t, a, root)
			}
			type res struct {
				release func() error
				err     error
			}
			results := make(chan res, n)
			for i := range n {
				go func() {
					_, rel, err := waits[i](ctx)
					results <- res{rel, err}
				}()
			}
			zktest.Eventually(t, 20*time.Second, "every wait queued", func() bool {
				for i := range n {
					if len(nemesis.Queue(t, obs.Conn(), r.queue(fmt.Sprintf("%s/p%d", base, i)))) < 2 {
						return false
					}
				}
				return true
			})
			px.Pause() // past the timeout: the server expires A's session
			time.Sleep(nemesis.Timeout * 3 / 2)
			px.Resume()
			select {
			case <-expired:
			case <-time.After(nemesis.Bound):
				t.Fatal("A's listener never heard of the expiry")
			}
			for _, rel := range releases {
				if err := rel(); err != nil {
					t.Fatal(err)
				}
			}
			deadline := time.After(nemesis.Bound)
			granted, failed := 0, 0
			for range n {
				select {
				case r := <-results:
					if r.err != nil {
						failed++
						continue
					}
					granted++
					if err := r.release(); err != nil && !errors.Is(err, tier.ErrLockLost) {
						t.Errorf("release: %v", err)
					}
				case <-deadline:
					t.Fatalf("%d of %d waits still blocked %v after B released", n-granted-failed, n, nemesis.Bound)
				}
			}
			t.Logf("after the expiry: %d granted in the new session, %d failed", granted, failed)
			// The session works: a fresh acquisition holds.
			_, rel, err := r.grant(t, a, base+"/fresh")(ctx)
			if err != nil {
				t.Fatalf("a fresh acquisition after the flood: %v", err)
			}
			if err := rel(); err != nil {
				t.Errorf("release of the fresh hold: %v", err)
			}
			zktest.Eventually(t, nemesis.Bound, "no node left", func() bool {
				for i := range n {
					if len(nemesis.Queue(t, obs.Conn(), r.queue(fmt.Sprintf("%s/p%d", base, i)))) != 0 {
						return false
					}
				}
				return true
			})
		})
	}
}
