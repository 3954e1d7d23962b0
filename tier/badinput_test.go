package tier_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/nilcheck"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// badEnv is what the cases of TestBadInputTable share: a session, a lock
// and a registry on it that must keep working whatever bad call came
// before.
type badEnv struct {
	servers []string
	s       *zklock.Session
	path    string
	l       *tier.Lock
	root    string
	reg     *tier.Registry
}

func (e *badEnv) closedSession(t *testing.T) *zklock.Session {
	s := connect(t, e.servers)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return s
}

func (e *badEnv) registry(t *testing.T) *tier.Registry {
	r, err := tier.NewRegistry(e.s, zktest.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

var (
	cancelledCtx = zktest.Cancelled
	callSafely   = zktest.NoPanic
)

type badCase struct {
	name string
	want error
	call func(t *testing.T, e *badEnv) error
}

func newCase(name string, want error, call func() error) badCase {
	return badCase{name: name, want: want, call: func(*testing.T, *badEnv) error { return call() }}
}

// Every exported entry point of tier given bad input answers with a
// sentinel error (errors.Is), never a panic, and leaves the lock and the
// registry working. TestBadInput and TestReentrancyDepth (lock_test.go)
// cover the basic cases; these are the rest.
func TestBadInputTable(t *testing.T) {
	e := &badEnv{servers: zktest.Servers(t)}
	e.s = connect(t, e.servers)
	e.path = zktest.Path(t)
	e.l = newLock(t, e.s, e.path)
	e.root = zktest.Path(t)
	reg, err := tier.NewRegistry(e.s, e.root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	e.reg = reg
	bg := context.Background()
	var nilLock *tier.Lock
	var nilReg *tier.Registry

	newLockErr := func(path string, opts ...tier.Option) func() error {
		return func() error {
			l, err := tier.New(e.s, path, opts...)
			if err == nil {
				l.Close()
			}
			return err
		}
	}
	newRegErr := func(s *zklock.Session, root string, opts ...tier.Option) func() error {
		return func() error {
			r, err := tier.NewRegistry(s, root, opts...)
			if err == nil {
				r.Close()
			}
			return err
		}
	}
	obtainErr := func(key string) func() error {
		return func() error { _, err := e.reg.Acquire(context.Background(), key); return err }
	}

	cases := []badCase{
		// Paths, keys and options.
		newCase("New/empty path", tier.ErrInvalidPath, newLockErr("")),
		newCase("New/root", tier.ErrInvalidPath, newLockErr("/")),
		newCase("New/trailing slash", tier.ErrInvalidPath, newLockErr("/a/")),
		newCase("New/empty segment", tier.ErrInvalidPath, newLockErr("/a//b")),
		newCase("New/dot segment", tier.ErrInvalidPath, newLockErr("/a/./b")),
		newCase("New/dotdot segment", tier.ErrInvalidPath, newLockErr("/a/../b")),
		newCase("New/under /zookeeper", tier.ErrInvalidPath, newLockErr("/zookeeper/x")),
		newCase("New/NUL", tier.ErrInvalidPath, newLockErr("/a\x00")),
		newCase("New/hand-off count zero, time positive", tier.ErrInvalidOption, newLockErr("/x", tier.WithHandoff(0, time.Second))),
		newCase("New/hand-off time negative", tier.ErrInvalidOption, newLockErr("/x", tier.WithHandoff(1, -time.Second))),
		newCase("New/hand-off both negative", tier.ErrInvalidOption, newLockErr("/x", tier.WithHandoff(-1, -time.Second))),
		// A zklock option passed through keeps zklock's sentinel.
		newCase("New/zero recheck via WithLockOptions", zklock.ErrInvalidOption,
			newLockErr("/x", tier.WithLockOptions(zklock.WithRecheckInterval(0)))),
		{name: "New/closed session", want: zklock.ErrSessionClosed, call: func(t *testing.T, e *badEnv) error {
			_, err := tier.New(e.closedSession(t), "/x")
			return err
		}},
		newCase("NewRegistry/nil session", zklock.ErrNilSession, newRegErr(nil, "/x")),
		newCase("NewRegistry/empty root", tier.ErrInvalidPath, newRegErr(e.s, "")),
		newCase("NewRegistry/relative root", tier.ErrInvalidPath, newRegErr(e.s, "locks")),
		newCase("NewRegistry/root of the tree", tier.ErrInvalidPath, newRegErr(e.s, "/")),
		newCase("NewRegistry/trailing slash", tier.ErrInvalidPath, newRegErr(e.s, "/locks/")),
		newCase("NewRegistry/dotdot", tier.ErrInvalidPath, newRegErr(e.s, "/locks/..")),
		newCase("NewRegistry/zookeeper", tier.ErrInvalidPath, newRegErr(e.s, "/zookeeper")),
		newCase("NewRegistry/bad hand-off", tier.ErrInvalidOption, newRegErr(e.s, "/locks", tier.WithHandoff(2, 0))),
		newCase("Registry.Acquire/empty key", tier.ErrInvalidPath, obtainErr("")),
		newCase("Registry.Acquire/dot", tier.ErrInvalidPath, obtainErr(".")),
		newCase("Registry.Acquire/dotdot", tier.ErrInvalidPath, obtainErr("..")),
		newCase("Registry.Acquire/slash inside", tier.ErrInvalidPath, obtainErr("job/1")),
		newCase("Registry.Acquire/leading slash", tier.ErrInvalidPath, obtainErr("/job")),
		newCase("Registry.Acquire/trailing slash", tier.ErrInvalidPath, obtainErr("job/")),
		newCase("Registry.Acquire/NUL", tier.ErrInvalidPath, obtainErr("job\x00")),
		newCase("Registry.Acquire/newline", tier.ErrInvalidPath, obtainErr("job\n")),
		newCase("Registry.Acquire/invalid UTF-8", tier.ErrInvalidPath, obtainErr("\xff")),
		{name: "Registry.Acquire/closed session", want: zklock.ErrSessionClosed, call: func(t *testing.T, e *badEnv) error {
			r, err := tier.NewRegistry(e.closedSession(t), "/locks")
			if err != nil {
				return err
			}
			defer r.Close()
			_, err = r.Acquire(context.Background(), "job")
			return err
		}},

		// Nil receivers and nil contexts.
		newCase("nil Lock/TryAcquire", tier.ErrNil, func() error { _, _, err := nilLock.TryAcquire(bg); return err }),
		newCase("nil Lock/Release", tier.ErrNil, func() error { return nilLock.Release(bg) }),
		newCase("nil Lock/Token", tier.ErrNil, func() error { _, err := nilLock.Token(bg); return err }),
		newCase("nil Lock/Close", tier.ErrNil, func() error { return nilLock.Close() }),
		newCase("nil Lock/HoldCount", nil, func() error {
			if n := nilLock.HoldCount(bg); n != 0 {
				return errors.New("HoldCount of a nil lock is not 0")
			}
			return nil
		}),
		newCase("nil Registry/Acquire", tier.ErrNil, func() error { _, err := nilReg.Acquire(bg, "job"); return err }),
		newCase("nil Registry/Release", tier.ErrNil, func() error { return nilReg.Release(bg) }),
		newCase("nil Registry/Token", tier.ErrNil, func() error { _, err := nilReg.Token(bg); return err }),
		newCase("nil Registry/Close", tier.ErrNil, func() error { return nilReg.Close() }),
		//nolint:staticcheck // the nil context is the bad input under test
		newCase("nil ctx/TryAcquire", tier.ErrNilContext, func() error { _, _, err := e.l.TryAcquire(nil); return err }),
		//nolint:staticcheck // the nil context is the bad input under test
		newCase("nil ctx/Release", tier.ErrNilContext, func() error { return e.l.Release(nil) }),
		//nolint:staticcheck // the nil context is the bad input under test
		newCase("nil ctx/Token", tier.ErrNilContext, func() error { _, err := e.l.Token(nil); return err }),
		newCase("nil ctx/HoldCount", nil, func() error {
			//nolint:staticcheck // the nil context is the bad input under test
			if n := e.l.HoldCount(nil); n != 0 {
				return errors.New("HoldCount(nil) is not 0")
			}
			return nil
		}),

		// Contexts that are already over: nothing held, nothing left queued.
		newCase("Acquire/cancelled", context.Canceled, func() error { _, err := e.l.Acquire(cancelledCtx()); return err }),
		newCase("TryAcquire/cancelled", context.Canceled, func() error { _, _, err := e.l.TryAcquire(cancelledCtx()); return err }),
		newCase("Acquire/past deadline", context.DeadlineExceeded, func() error {
			ctx, cancel := context.WithDeadline(bg, time.Now().Add(-time.Second))
			defer cancel()
			_, err := e.l.Acquire(ctx)
			return err
		}),

		// Holds that are not the current one.
		{name: "Release/stale hold of the same lock", want: tier.ErrNotHolder, call: func(t *testing.T, e *badEnv) error {
			ctx := ctxT(t, 10*time.Second)
			old, err := e.l.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.l.Release(old); err != nil {
				t.Fatal(err)
			}
			cur, err := e.l.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer e.l.Release(cur)
			tok, _ := e.l.Token(cur)
			err = e.l.Release(old)
			if _, terr := e.l.Token(old); !errors.Is(terr, tier.ErrNotHolder) {
				t.Errorf("Token of a stale hold: %v", terr)
			}
			if n := e.l.HoldCount(cur); n != 1 || cur.Err() != nil {
				t.Errorf("current hold after a stale release: count %d, ctx %v", n, cur.Err())
			}
			if tk, _ := e.l.Token(cur); tk != tok {
				t.Errorf("current token changed: %d -> %d", tok, tk)
			}
			return err
		}},
		{name: "Acquire/with a released hold's context", want: context.Canceled, call: func(t *testing.T, e *badEnv) error {
			// A released hold's context is cancelled: it cannot be used to
			// wait for the lock again.
			old, err := e.l.Acquire(ctxT(t, 10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if err := e.l.Release(old); err != nil {
				t.Fatal(err)
			}
			_, err = e.l.Acquire(old)
			return err
		}},
		{name: "Release/hold of another registry", want: tier.ErrNotHolder, call: func(t *testing.T, e *badEnv) error {
			ha, err := e.reg.Acquire(ctxT(t, 10*time.Second), "a")
			if err != nil {
				t.Fatal(err)
			}
			other := e.registry(t)
			err = other.Release(ha)
			if e.reg.HoldCount(ha) != 1 || ha.Err() != nil {
				t.Errorf("a's hold changed: count %d, ctx %v", e.reg.HoldCount(ha), ha.Err())
			}
			if rerr := e.reg.Release(ha); rerr != nil {
				t.Errorf("a's release: %v", rerr)
			}
			return err
		}},
		{name: "Locker/Unlock without Lock", want: nil, call: func(t *testing.T, e *badEnv) error {
			// Logged and ignored (documented); the lock stays usable.
			e.l.Locker().Unlock()
			return nil
		}},

		// Use after Close.
		{name: "closed Lock/TryAcquire", want: tier.ErrClosed, call: func(t *testing.T, e *badEnv) error {
			l := newLock(t, e.s, zktest.Path(t))
			l.Close()
			_, _, err := l.TryAcquire(bg)
			return err
		}},
		{name: "closed Lock/Release of the hold it had", want: tier.ErrClosed,
			call: func(t *testing.T, e *badEnv) error {
				l := newLock(t, e.s, zktest.Path(t))
				held, err := l.Acquire(ctxT(t, 10*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				l.Close()
				return l.Release(held)
			}},
		{name: "closed Lock/held context ends", want: tier.ErrClosed, call: func(t *testing.T, e *badEnv) error {
			l := newLock(t, e.s, zktest.Path(t))
			held, err := l.Acquire(ctxT(t, 10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			l.Close()
			if held.Err() == nil {
				t.Error("held context not cancelled by Close")
			}
			if n := l.HoldCount(held); n != 0 {
				t.Errorf("HoldCount after Close = %d", n)
			}
			return context.Cause(held)
		}},
		{name: "closed session/Acquire", want: zklock.ErrSessionClosed, call: func(t *testing.T, e *badEnv) error {
			s := connect(t, e.servers)
			l := newLock(t, s, zktest.Path(t))
			s.Close()
			_, err := l.Acquire(ctxT(t, 10*time.Second))
			return err
		}},
		{name: "closed session/TryAcquire frees the gate", want: zklock.ErrSessionClosed, call: func(t *testing.T, e *badEnv) error {
			s := connect(t, e.servers)
			l := newLock(t, s, zktest.Path(t))
			s.Close()
			_, _, err := l.TryAcquire(bg)
			// The failed call gave the gate back: another one fails the
			// same way instead of finding the gate taken.
			if _, ok, err2 := l.TryAcquire(bg); ok || !errors.Is(err2, zklock.ErrSessionClosed) {
				t.Errorf("second TryAcquire = %v, %v", ok, err2)
			}
			return err
		}},
		{name: "closed Registry/Acquire", want: tier.ErrClosed, call: func(t *testing.T, e *badEnv) error {
			r := e.registry(t)
			r.Close()
			_, err := r.Acquire(context.Background(), "job")
			return err
		}},
		{name: "closed Registry/Close again", want: nil, call: func(t *testing.T, e *badEnv) error {
			r := e.registry(t)
			r.Close()
			return r.Close()
		}},
		{name: "closed Registry/hold taken before", want: nil, call: func(t *testing.T, e *badEnv) error {
			r := e.registry(t)
			h, err := r.Acquire(ctxT(t, 5*time.Second), "job")
			if err != nil {
				t.Fatal(err)
			}
			r.Close()
			if h.Err() == nil {
				return errors.New("hold not cancelled by the registry's Close")
			}
			if err := r.Release(h); !errors.Is(err, tier.ErrClosed) {
				return fmt.Errorf("Release after Close = %v, want ErrClosed", err)
			}
			return nil
		}},
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := callSafely(t, func() error { return c.call(t, e) })
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("got %v, want %v", err, c.want)
			}
			stillWorks(t, e)
		})
	}
}

// stillWorks checks the shared lock and registry after a case: free, and
// they can be taken and given back.
func stillWorks(t *testing.T, e *badEnv) {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	held, ok, err := e.l.TryAcquire(ctx)
	if !ok || err != nil {
		// A node the case queued may still be on its way out.
		if held, err = e.l.Acquire(ctx); err != nil {
			t.Fatalf("shared lock no longer acquires: %v", err)
		}
	}
	if tok, err := e.l.Token(held); err != nil || tok <= 0 || e.l.HoldCount(held) != 1 {
		t.Fatalf("shared lock's hold: token %d (%v), count %d", tok, err, e.l.HoldCount(held))
	}
	if err := e.l.Release(held); err != nil {
		t.Fatalf("shared lock no longer releases: %v", err)
	}
	rh, err := e.reg.Acquire(ctx, "check")
	if err != nil {
		t.Fatalf("registry no longer acquires: %v", err)
	}
	if err := e.reg.Release(rh); err != nil {
		t.Fatalf("registry no longer releases: %v", err)
	}
	if n := e.reg.Len(); n != 0 {
		t.Fatalf("registry keeps %d locks after the case", n)
	}
}

// Issue 21, item 7: one convention for methods on nil pointers, applied to
// every type: no panic, an error when the method returns one. The one
// exception, Locker.Lock, which panics where it cannot lock, is checked
// with the Locker's other methods by TestLockerPanicsWhereItCannotLock.
func TestNilReceivers(t *testing.T) {
	nilcheck.Methods(t, (*tier.Lock)(nil), (*tier.Registry)(nil), (*tier.RWLock)(nil), (*tier.RWRegistry)(nil),
		(*tier.Semaphore)(nil), (*tier.SemaphoreRegistry)(nil), (*tier.MultiLock)(nil))
}
