package zklock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/nilcheck"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// badEnv is what the cases of TestBadInputTable share: a live session and
// a lock on it that must keep working whatever bad call came before.
type badEnv struct {
	servers []string
	s       *zklock.Session
	path    string
	l       *zklock.Lock
}

// closedLock returns a lock on a fresh path that was closed.
func (e *badEnv) closedLock(t *testing.T) *zklock.Lock {
	l := newLock(t, e.s, zktest.Path(t))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return l
}

// orphanedLock returns a lock whose session was closed.
func (e *badEnv) orphanedLock(t *testing.T) *zklock.Lock {
	s := connect(t, e.servers)
	l := newLock(t, s, zktest.Path(t))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return l
}

var (
	cancelled  = zktest.Cancelled
	callSafely = zktest.NoPanic
)

type badCase struct {
	name string
	want error
	call func(t *testing.T, e *badEnv) error
}

// newCase is a shorthand for a case whose call needs nothing but a value.
func newCase(name string, want error, call func() error) badCase {
	return badCase{name: name, want: want, call: func(*testing.T, *badEnv) error { return call() }}
}

// Every exported entry point given bad input answers with a sentinel error
// (errors.Is), never a panic, and leaves the lock working. TestBadInput
// (lock_test.go) covers the basic cases; these are the rest.
func TestBadInputTable(t *testing.T) {
	e := &badEnv{servers: zktest.Servers(t)}
	e.s = connect(t, e.servers)
	e.path = zktest.Path(t)
	e.l = newLock(t, e.s, e.path)
	bg := context.Background()
	var nilLock *zklock.Lock
	var nilHold *zklock.Hold
	var nilSession *zklock.Session

	cases := []badCase{
		// Paths and keys the server would refuse or misread.
		newCase("New/invalid UTF-8", zklock.ErrInvalidPath, func() error { _, err := zklock.New(e.s, "/a\xff"); return err }),
		newCase("New/C1 control", zklock.ErrInvalidPath, func() error { _, err := zklock.New(e.s, "/a\u0085b"); return err }),
		newCase("New/private use", zklock.ErrInvalidPath, func() error { _, err := zklock.New(e.s, "/a/\ue000"); return err }),
		newCase("New/U+FFFE", zklock.ErrInvalidPath, func() error { _, err := zklock.New(e.s, "/a/\ufffe"); return err }),
		newCase("New/trailing dot segment", zklock.ErrInvalidPath, func() error { _, err := zklock.New(e.s, "/a/."); return err }),
		newCase("New/double slash only", zklock.ErrInvalidPath, func() error { _, err := zklock.New(e.s, "//"); return err }),
		newCase("New/zookeeper itself", zklock.ErrInvalidPath, func() error { _, err := zklock.New(e.s, "/zookeeper"); return err }),
		{name: "New/astral plane character", want: zklock.ErrInvalidPath,
			call: func(t *testing.T, e *badEnv) error {
				_, err := zklock.New(e.s, zktest.Path(t)+"/\U0001f600")
				return err
			}},
		newCase("ValidatePath/empty", zklock.ErrInvalidPath, func() error { return zklock.ValidatePath("") }),
		newCase("ValidatePath/dotdot", zklock.ErrInvalidPath, func() error { return zklock.ValidatePath("/..") }),
		newCase("ValidateKey/empty", zklock.ErrInvalidPath, func() error { return zklock.ValidateKey("") }),
		newCase("ValidateKey/dot", zklock.ErrInvalidPath, func() error { return zklock.ValidateKey(".") }),
		newCase("ValidateKey/dotdot", zklock.ErrInvalidPath, func() error { return zklock.ValidateKey("..") }),
		newCase("ValidateKey/slash inside", zklock.ErrInvalidPath, func() error { return zklock.ValidateKey("a/b") }),
		newCase("ValidateKey/leading slash", zklock.ErrInvalidPath, func() error { return zklock.ValidateKey("/a") }),
		newCase("ValidateKey/NUL", zklock.ErrInvalidPath, func() error { return zklock.ValidateKey("a\x00") }),
		newCase("ValidateKey/tab", zklock.ErrInvalidPath, func() error { return zklock.ValidateKey("a\tb") }),
		newCase("ValidateKey/invalid UTF-8", zklock.ErrInvalidPath, func() error { return zklock.ValidateKey("\xc3") }),

		// Zero and negative options.
		newCase("Connect/empty server list", zklock.ErrInvalidOption, func() error { _, err := zklock.Connect(bg, []string{}); return err }),
		newCase("Connect/zero session timeout", zklock.ErrInvalidOption, func() error {
			_, err := zklock.Connect(bg, e.servers, zklock.WithSessionTimeout(0))
			return err
		}),
		newCase("Connect/negative session timeout", zklock.ErrInvalidOption, func() error {
			_, err := zklock.Connect(bg, e.servers, zklock.WithSessionTimeout(-time.Second))
			return err
		}),
		newCase("Connect/zero retry interval", zklock.ErrInvalidOption, func() error {
			_, err := zklock.Connect(bg, e.servers, zklock.WithMaxRetryInterval(0))
			return err
		}),
		newCase("NewSession/negative retry interval", zklock.ErrInvalidOption, func() error {
			_, err := zklock.NewSession(e.s.Conn(), make(chan zk.Event), zklock.WithMaxRetryInterval(-time.Millisecond))
			return err
		}),
		newCase("NewSession/nil connection", zklock.ErrNilSession, func() error {
			_, err := zklock.NewSession(nil, make(chan zk.Event))
			return err
		}),
		newCase("NewSession/nil events is valid", nil, func() error {
			s, err := zklock.NewSession(e.s.Conn(), nil)
			if err == nil {
				err = s.Close()
			}
			return err
		}),
		newCase("New/negative recheck", zklock.ErrInvalidOption, func() error {
			_, err := zklock.New(e.s, e.path, zklock.WithRecheckInterval(-time.Second))
			return err
		}),
		newCase("New/nil ACL", zklock.ErrInvalidOption, func() error { _, err := zklock.New(e.s, e.path, zklock.WithACL(nil)); return err }),
		newCase("New/empty ACL", zklock.ErrInvalidOption, func() error { _, err := zklock.New(e.s, e.path, zklock.WithACL([]zk.ACL{})); return err }),
		newCase("Connect/unreachable server", context.DeadlineExceeded, func() error {
			ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
			defer cancel()
			_, err := zklock.Connect(ctx, []string{"127.0.0.1:1"}, zklock.WithLogger(quietLog))
			return err
		}),

		// Nil receivers and nil contexts.
		newCase("nil Lock/Acquire", zklock.ErrNil, func() error { _, err := nilLock.Acquire(bg); return err }),
		newCase("nil Lock/TryAcquire", zklock.ErrNil, func() error { _, _, err := nilLock.TryAcquire(bg); return err }),
		newCase("nil Lock/Participants", zklock.ErrNil, func() error { _, err := nilLock.Participants(bg); return err }),
		newCase("nil Lock/Close", zklock.ErrNil, func() error { return nilLock.Close() }),
		newCase("nil Hold/Release", zklock.ErrNil, func() error { return nilHold.Release() }),
		newCase("nil Hold/Err", zklock.ErrNil, func() error { return nilHold.Err() }),
		newCase("nil Hold/Txn", zklock.ErrNil, func() error { _, err := nilHold.Txn(bg); return err }),
		newCase("nil Session/Close", zklock.ErrNil, func() error { return nilSession.Close() }),
		//nolint:staticcheck // the nil context is the bad input under test
		newCase("nil ctx/TryAcquire", zklock.ErrNilContext, func() error { _, _, err := e.l.TryAcquire(nil); return err }),
		{name: "nil ctx/Txn", want: zklock.ErrNilContext, call: func(t *testing.T, e *badEnv) error {
			h, err := e.l.Acquire(ctxT(t, 10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			//nolint:staticcheck // the nil context is the bad input under test
			_, err = h.Txn(nil)
			if h.Err() != nil {
				t.Errorf("the hold ended: %v", h.Err())
			}
			if rerr := h.Release(); rerr != nil {
				t.Errorf("release after the bad call: %v", rerr)
			}
			return err
		}},
		//nolint:staticcheck // the nil context is the bad input under test
		newCase("nil ctx/Participants", zklock.ErrNilContext, func() error { _, err := e.l.Participants(nil); return err }),
		{name: "nil ctx/Connect", want: zklock.ErrNilContext,
			call: func(t *testing.T, e *badEnv) error {
				//nolint:staticcheck // the nil context is the bad input under test
				_, err := zklock.Connect(nil, e.servers, zklock.WithLogger(quietLog))
				return err
			}},

		// Contexts that are already over.
		newCase("Acquire/cancelled", context.Canceled, func() error { _, err := e.l.Acquire(cancelled()); return err }),
		newCase("TryAcquire/cancelled", context.Canceled, func() error { _, _, err := e.l.TryAcquire(cancelled()); return err }),
		newCase("Acquire/past deadline", context.DeadlineExceeded, func() error {
			ctx, cancel := context.WithDeadline(bg, time.Now().Add(-time.Second))
			defer cancel()
			_, err := e.l.Acquire(ctx)
			return err
		}),

		// Holds that are not ours, or no longer.
		{name: "TryAcquire while held", want: zklock.ErrAlreadyHeld, call: func(t *testing.T, e *badEnv) error {
			h, err := e.l.Acquire(ctxT(t, 10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			node, tok := h.Node(), h.Token()
			h2, ok, err := e.l.TryAcquire(bg)
			if h2 != nil || ok {
				t.Errorf("TryAcquire while held returned a hold: %v, %v", h2, ok)
			}
			if h.Node() != node || h.Token() != tok || h.Err() != nil {
				t.Errorf("the hold changed: node %q -> %q, token %d -> %d, err %v", node, h.Node(), tok, h.Token(), h.Err())
			}
			if rerr := h.Release(); rerr != nil {
				t.Errorf("release after the bad call: %v", rerr)
			}
			return err
		}},
		{name: "Release twice after TryAcquire", want: zklock.ErrNotHeld, call: func(t *testing.T, e *badEnv) error {
			h, ok, err := e.l.TryAcquire(ctxT(t, 10*time.Second))
			if !ok || err != nil || h == nil {
				t.Fatalf("TryAcquire = %v, %v, %v", h, ok, err)
			}
			if err := h.Release(); err != nil {
				t.Fatal(err)
			}
			return h.Release()
		}},
		{name: "Release of a hold its Lock's Close ended", want: zklock.ErrClosed, call: func(t *testing.T, e *badEnv) error {
			other := newLock(t, connect(t, e.servers), e.path)
			return closedRelease(t, other, e)
		}},
		{name: "Release of a hold its Lock's Close ended, same session", want: zklock.ErrClosed, call: func(t *testing.T, e *badEnv) error {
			other := newLock(t, e.s, e.path)
			return closedRelease(t, other, e)
		}},

		// Use after Close.
		{name: "closed Lock/TryAcquire", want: zklock.ErrClosed, call: func(t *testing.T, e *badEnv) error {
			_, _, err := e.closedLock(t).TryAcquire(bg)
			return err
		}},
		{name: "closed Lock/Acquire", want: zklock.ErrClosed, call: func(t *testing.T, e *badEnv) error {
			h, err := e.closedLock(t).Acquire(bg)
			if h != nil {
				t.Errorf("closed lock returned a hold %v", h)
			}
			return err
		}},
		{name: "closed Lock/Participants", want: zklock.ErrClosed,
			call: func(t *testing.T, e *badEnv) error {
				_, err := e.closedLock(t).Participants(bg)
				return err
			}},
		{name: "closed Lock/Close again", want: nil, call: func(t *testing.T, e *badEnv) error {
			return e.closedLock(t).Close()
		}},
		{name: "nil Hold/state", want: nil, call: func(t *testing.T, e *badEnv) error {
			if nilHold.Token() != 0 || nilHold.Node() != "" {
				t.Errorf("nil hold: token %d, node %q", nilHold.Token(), nilHold.Node())
			}
			select {
			case <-nilHold.Lost():
			default:
				t.Error("Lost() of a nil hold is not closed")
			}
			return nil
		}},
		{name: "closed Session/TryAcquire", want: zklock.ErrSessionClosed, call: func(t *testing.T, e *badEnv) error {
			_, _, err := e.orphanedLock(t).TryAcquire(bg)
			return err
		}},
		{name: "closed Session/Acquire", want: zklock.ErrSessionClosed, call: func(t *testing.T, e *badEnv) error {
			_, err := e.orphanedLock(t).Acquire(bg)
			return err
		}},
		{name: "closed Session/Release", want: zklock.ErrSessionClosed, call: func(t *testing.T, e *badEnv) error {
			s := connect(t, e.servers)
			h, err := newLock(t, s, e.path).Acquire(ctxT(t, 10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			err = h.Release()
			if !errors.Is(err, zklock.ErrLockLost) {
				t.Errorf("Release after the session closed = %v, want ErrLockLost", err)
			}
			return err
		}},
		{name: "closed Session/Participants", want: zklock.ErrSessionClosed, call: func(t *testing.T, e *badEnv) error {
			_, err := e.orphanedLock(t).Participants(bg)
			return err
		}},
		{name: "closed Session/Lock.Close", want: nil, call: func(t *testing.T, e *badEnv) error {
			return e.orphanedLock(t).Close()
		}},
		{name: "closed Session/methods", want: nil, call: func(t *testing.T, e *badEnv) error {
			s := connect(t, e.servers)
			if s.SessionID() == 0 {
				t.Error("no session id while connected")
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if st := s.State(); st != zklock.StateClosed {
				t.Errorf("State after Close = %v", st)
			}
			select {
			case <-s.Done():
			default:
				t.Error("Done not closed after Close")
			}
			return s.Close()
		}},
		{name: "closed Session/hold ends", want: zklock.ErrLockLost, call: func(t *testing.T, e *badEnv) error {
			s := connect(t, e.servers)
			l := newLock(t, s, e.path)
			h, err := l.Acquire(ctxT(t, 10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			select {
			case <-h.Lost():
			case <-time.After(5 * time.Second):
				t.Error("hold not lost when its session closed")
			}
			if err := h.Err(); !errors.Is(err, zklock.ErrSessionClosed) {
				t.Errorf("Err after session Close = %v, want cause ErrSessionClosed", err)
			}
			return h.Err()
		}},
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := callSafely(t, func() error { return c.call(t, e) })
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("got %v, want %v", err, c.want)
			}
			lockStillWorks(t, e)
		})
	}
}

// closedRelease has holder take the lock, closes holder (which releases
// the hold), and releases the hold again: that Release must fail with
// ErrNotHeld, and the node must go (lockStillWorks then takes the lock). (The old "Release of another lock's hold" has no counterpart: a
// hold is released through its own value only.)
func closedRelease(t *testing.T, holder *zklock.Lock, e *badEnv) error {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	h, err := holder.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node := h.Node()
	if ok, _, zerr := holder.Session().Conn().Exists(node); zerr != nil || !ok {
		t.Errorf("holder's node %s: exists %v, %v", node, ok, zerr)
	}
	if err := holder.Close(); err != nil {
		t.Fatal(err)
	}
	// Close ended the hold as lost (issue 37, item 1): Lost is closed, and
	// Release says so, with ErrLockLost and ErrClosed.
	if !zktest.IsClosed(h.Lost()) {
		t.Error("Close left the hold's Lost channel open")
	}
	err = h.Release()
	if !errors.Is(err, zklock.ErrLockLost) {
		t.Errorf("Release after Close = %v, want ErrLockLost", err)
	}
	eventually(t, 5*time.Second, "holder's node deleted", func() bool {
		ok, _, zerr := e.s.Conn().Exists(node)
		return zerr == nil && !ok
	})
	return err
}

// lockStillWorks checks the shared lock after a case: free, and it can be
// taken and given back.
func lockStillWorks(t *testing.T, e *badEnv) {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	// Acquire would return ErrAlreadyHeld if a case had left the shared
	// lock holding.
	h, err := e.l.Acquire(ctx)
	if err != nil {
		t.Fatalf("shared lock no longer acquires: %v", err)
	}
	if h.Token() <= 0 || h.Err() != nil {
		t.Fatalf("shared lock's hold: token %d, err %v", h.Token(), h.Err())
	}
	if err := h.Release(); err != nil {
		t.Fatalf("shared lock no longer releases: %v", err)
	}
}

// Issue 21, item 4: a path or node data too large for the server (its
// jute.maxbuffer is 1 MB) or for go-zookeeper's 1.5 MB buffer is refused
// before anything is sent; it must not take the session, and every other
// hold on it, down.
func TestOversizedRefused(t *testing.T) {
	servers := zktest.Servers(t)
	s := connect(t, servers)
	ctx := ctxT(t, 60*time.Second)
	other, err := newLock(t, s, zktest.Path(t)+"/other").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		name  string
		path  string
		opts  []zklock.Option
		match error
	}{
		{"path 1.1MB", "/big/" + strings.Repeat("p", 1100<<10), nil, zklock.ErrInvalidPath},
		{"path 2MB", "/big/" + strings.Repeat("p", 2<<20), nil, zklock.ErrInvalidPath},
		{"label 1.1MB", zktest.Path(t) + "/label", []zklock.Option{zklock.WithLabel(strings.Repeat("l", 1100<<10))}, zklock.ErrInvalidOption},
		{"label 2MB", zktest.Path(t) + "/label2", []zklock.Option{zklock.WithLabel(strings.Repeat("l", 2<<20))}, zklock.ErrInvalidOption},
	} {
		t.Run(v.name, func(t *testing.T) {
			start := time.Now()
			l, err := zklock.New(s, v.path, v.opts...)
			if err == nil {
				actx, cancel := context.WithTimeout(ctx, 5*time.Second)
				_, err = l.Acquire(actx)
				cancel()
				l.Close()
			}
			if !errors.Is(err, v.match) {
				t.Errorf("got %v after %v; want an error wrapping %v at once", err, time.Since(start).Round(time.Millisecond), v.match)
			}
			select {
			case <-other.Lost():
				t.Fatalf("the session's other hold was lost: %v", other.Err())
			default:
			}
		})
	}
	if err := other.Release(); err != nil {
		t.Fatalf("the other hold: %v", err)
	}
}

// The size limits are exact, and what they admit works: a lock path of
// 4000 bytes and a label of 60 KiB are acquired (their nodes made and
// deleted on the server); one byte more of path, or a node's data past
// 64 KiB, is refused before anything is sent. Within a chroot too, whose
// bytes the server reads in every path.
func TestSizeLimitsExact(t *testing.T) { inChroots(t, sizeLimitsExact) }

func sizeLimitsExact(t *testing.T, inChroot bool) {
	s, _, _ := sizeSessions(t, inChroot)
	ctx := ctxT(t, 30*time.Second)
	base := zktest.Path(t) + "/"
	path := func(n int) string { return base + strings.Repeat("p", n-len(base)) }
	for _, v := range []struct {
		name string
		path string
		opts []zklock.Option
		want error // nil: acquired
	}{
		{"path 4000 bytes", path(4000), nil, nil},
		{"path 4001 bytes", path(4001), nil, zklock.ErrInvalidPath},
		{"label 60 KiB", base + "label", []zklock.Option{zklock.WithLabel(strings.Repeat("l", 60<<10))}, nil},
		{"label 64 KiB", base + "label64", []zklock.Option{zklock.WithLabel(strings.Repeat("l", 64<<10))}, zklock.ErrInvalidOption},
	} {
		sent := zklock.Written(s, zklock.OpCreate) + zklock.Written(s, zklock.OpMulti)
		l, err := zklock.New(s, v.path, v.opts...)
		if v.want != nil {
			if !errors.Is(err, v.want) {
				t.Errorf("%s: New: %v; want %v", v.name, err, v.want)
			}
			if n := zklock.Written(s, zklock.OpCreate) + zklock.Written(s, zklock.OpMulti) - sent; n != 0 {
				t.Errorf("%s: %d creates sent", v.name, n)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: New: %v", v.name, err)
		}
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Fatalf("%s: Acquire: %v", v.name, err)
		}
		if err := h.Release(); err != nil {
			t.Errorf("%s: Release: %v", v.name, err)
		}
		l.Close()
	}
}

// Issue 21, item 7: one convention for methods on nil pointers, applied to
// every type: no panic, an error when the method returns one.
func TestNilReceivers(t *testing.T) {
	nilcheck.Methods(t, (*zklock.Session)(nil), (*zklock.Lock)(nil), (*zklock.Hold)(nil), (*zklock.RWLock)(nil),
		(*zklock.Semaphore)(nil), (*zklock.Lease)(nil))
}
