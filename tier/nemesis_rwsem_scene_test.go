package tier_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// rwSemFaults are the nemesis faults applied to A's connection: A's
// connection closes (drop), goes silent past the session timeout (expire),
// or is reset by TCP (reset).
var rwSemFaults = []struct {
	name  string
	apply func(px *faultproxy.Proxy)
	heal  func(px *faultproxy.Proxy)
}{
	{"drop", func(px *faultproxy.Proxy) { px.DropAll() }, func(*faultproxy.Proxy) {}},
	{"expire", func(px *faultproxy.Proxy) { px.Pause() }, func(px *faultproxy.Proxy) {
		time.Sleep(nemTimeout * 3 / 2) // past the session timeout: the server expires A
		px.Resume()
	}},
	{"reset", func(px *faultproxy.Proxy) { px.Reset() }, func(*faultproxy.Proxy) {}},
}

// nemesisScene: A (behind a fault proxy) holds with acquireA; B waits with
// acquireB; the fault strikes A. A must be told (its held context
// cancelled with ErrLockLost) before B is granted; nothing overlaps; once
// all is released no node is left.
func nemesisScene(t *testing.T, acquireA, acquireB func(ctx context.Context) (context.Context, error),
	fault func(), heal func()) {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	heldA, err := acquireA(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type grant struct {
		at  time.Time
		err error
	}
	granted := make(chan grant, 1)
	go func() {
		_, err := acquireB(ctx)
		granted <- grant{time.Now(), err}
	}()
	time.Sleep(200 * time.Millisecond)
	select {
	case g := <-granted:
		t.Fatalf("B granted while A holds (err %v)", g.err)
	default:
	}
	faultAt := time.Now()
	fault()
	var toldAt time.Time
	select {
	case <-heldA.Done():
		toldAt = time.Now()
		if !errors.Is(context.Cause(heldA), tier.ErrLockLost) {
			t.Errorf("A's cause %v; want ErrLockLost", context.Cause(heldA))
		}
	case g := <-granted:
		t.Fatalf("B granted (%v) before A was told", g.err)
	case <-time.After(10 * time.Second):
		t.Fatal("A never told")
	}
	heal()
	select {
	case g := <-granted:
		if g.err != nil {
			t.Fatalf("B: %v", g.err)
		}
		if !toldAt.Before(g.at) {
			t.Errorf("A told at %v, B granted at %v", toldAt.Sub(faultAt), g.at.Sub(faultAt))
		}
		t.Logf("A told %v after the fault, B granted %v after", toldAt.Sub(faultAt).Round(time.Millisecond), g.at.Sub(faultAt).Round(time.Millisecond))
	case <-time.After(15 * time.Second):
		t.Fatal("B never granted")
	}
}

func TestRWNemesis(t *testing.T) {
	zktest.TracedStep(t)
	if testing.Short() {
		t.Skip("fault scenarios")
	}
	for _, f := range rwSemFaults {
		t.Run(f.name, func(t *testing.T) {
			servers := zktest.Servers(t)
			px := nemProxy(t, servers[0])
			a := connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(nemTimeout))
			b := connect(t, servers)
			path := zktest.Path(t)
			ra, rb := newRW(t, a, path), newRW(t, b, path)
			var bHeld context.Context
			// A writes, with a read riding on its write node, while B's writer
			// waits: the read hold must be told too.
			nemesisScene(t,
				func(ctx context.Context) (context.Context, error) {
					w, err := ra.Lock(ctx)
					if err != nil {
						return nil, err
					}
					r, err := ra.RLock(w)
					if err != nil {
						return nil, err
					}
					return r, nil
				},
				func(ctx context.Context) (context.Context, error) {
					h, err := rb.Lock(ctx)
					bHeld = h
					return h, err
				},
				func() { f.apply(px) }, func() { f.heal(px) })
			if err := rb.Release(bHeld); err != nil {
				t.Fatal(err)
			}
			ra.Close()
			a.Close()
			obs := connect(t, servers)
			eventually(t, 10*time.Second, "no node left", func() bool { return len(children(t, obs.Conn(), path)) == 0 })
		})
	}
}

func TestSemNemesis(t *testing.T) {
	zktest.TracedStep(t)
	if testing.Short() {
		t.Skip("fault scenarios")
	}
	for _, f := range rwSemFaults {
		t.Run(f.name, func(t *testing.T) {
			servers := zktest.Servers(t)
			px := nemProxy(t, servers[0])
			a := connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(nemTimeout))
			b := connect(t, servers)
			path := zktest.Path(t)
			sa, sb := newSem(t, a, path, 2), newSem(t, b, path, 2)
			var bHeld context.Context
			// A takes both leases; B waits for one.
			nemesisScene(t,
				func(ctx context.Context) (context.Context, error) { return sa.Acquire(ctx, 2) },
				func(ctx context.Context) (context.Context, error) {
					h, err := sb.Acquire(ctx, 1)
					bHeld = h
					return h, err
				},
				func() { f.apply(px) }, func() { f.heal(px) })
			if err := sb.Release(bHeld); err != nil {
				t.Fatal(err)
			}
			sa.Close()
			a.Close()
			obs := connect(t, servers)
			eventually(t, 10*time.Second, "no lease left", func() bool { return len(children(t, obs.Conn(), path+"/leases")) == 0 })
		})
	}
}
