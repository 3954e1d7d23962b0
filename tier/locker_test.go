package tier_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// The sync.Locker adapter (locker.go).

// Regression tests for issue 9's smaller defects in tier.

// The sync.Locker adapter no longer hides a loss: the holder can see it
// through Context and Err. Before: the held context was discarded, and a
// lost holder had no way to learn of it.
func TestLockerReportsLoss(t *testing.T) {
	servers := zktest.Servers(t)
	s := connect(t, servers)
	admin := connect(t, servers)
	p := zktest.Path(t)
	l := newLock(t, s, p)
	k := l.Locker()
	if err := k.Err(); !errors.Is(err, tier.ErrNotHolder) {
		t.Fatalf("Err outside a hold = %v, want ErrNotHolder", err)
	}
	k.Lock()
	if err := k.Err(); err != nil {
		t.Fatalf("Err while held = %v", err)
	}
	kids := children(t, admin.Conn(), p)
	if len(kids) != 1 {
		t.Fatalf("%d nodes, want 1", len(kids))
	}
	if err := admin.Conn().Delete(p+"/"+kids[0], -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-k.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Locker's context not cancelled when the node was deleted")
	}
	if err := k.Err(); !errors.Is(err, tier.ErrLockLost) || !errors.Is(err, zklock.ErrNodeDeleted) {
		t.Fatalf("Err after loss = %v, want ErrLockLost wrapping ErrNodeDeleted", err)
	}
	k.Unlock()
	if k.Context().Err() == nil {
		t.Fatal("Context outside a hold is not cancelled")
	}
}

// Issue 49, item 3: Locker.Lock never returns without the lock. Where it
// cannot lock, it returned at once, unlocked, and the code after it
// (README's mu.Lock(); counter++; mu.Unlock()) ran unprotected: a
// sync.Locker's caller has no error to look at. It panics instead, as
// etcd's concurrency.NewLocker does, with an error that names the lock's
// path and wraps the reason: the lock closed before Lock, or while Lock
// waited behind another holder; the session closed; a nil *Locker or a
// Locker not made by Lock.Locker. The other methods of a nil *Locker
// keep the package's convention (no panic).
func TestLockerPanicsWhereItCannotLock(t *testing.T) {
	s := connect(t, zktest.Servers(t))
	for _, c := range []struct {
		name string
		want error
		k    func(t *testing.T) (k *tier.Locker, path string)
	}{
		{"lock closed", tier.ErrClosed, func(t *testing.T) (*tier.Locker, string) {
			l := newLock(t, s, zktest.Path(t))
			l.Close()
			return l.Locker(), l.Path()
		}},
		{"lock closed while Lock waits", tier.ErrClosed, func(t *testing.T) (*tier.Locker, string) {
			l := newLock(t, s, zktest.Path(t))
			held, err := l.Acquire(ctxT(t, 10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				time.Sleep(200 * time.Millisecond) // Lock waits at the gate by then
				l.Close()
				_ = l.Release(held)
			}()
			return l.Locker(), l.Path()
		}},
		{"session closed", tier.ErrSessionClosed, func(t *testing.T) (*tier.Locker, string) {
			own := connect(t, zktest.Servers(t))
			l := newLock(t, own, zktest.Path(t))
			own.Close()
			return l.Locker(), l.Path()
		}},
		{"nil *Locker", tier.ErrNil, func(*testing.T) (*tier.Locker, string) { return nil, "" }},
		{"Locker not made by Lock.Locker", tier.ErrNil, func(*testing.T) (*tier.Locker, string) { return &tier.Locker{}, "" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			k, path := c.k(t)
			err := lockerPanic(k)
			switch {
			case err == nil:
				t.Fatal("Lock returned without the lock")
			case !errors.Is(err, c.want) || !strings.Contains(err.Error(), path):
				t.Fatalf("Lock panicked with %v; want an error wrapping %v that names %q", err, c.want, path)
			}
			t.Logf("panic: %v", err)
			if kerr := k.Err(); !errors.Is(kerr, tier.ErrNotHolder) && !errors.Is(kerr, tier.ErrNil) {
				t.Errorf("Err after the panic: %v", kerr)
			}
			k.Unlock() // nothing to unlock: logged or ignored, no panic
			if k.Context().Err() == nil {
				t.Error("Context not cancelled outside a hold")
			}
		})
	}
}

// lockerPanic calls k.Lock and returns the error it panicked with; nil
// when Lock returned (and then unlocks).
func lockerPanic(k *tier.Locker) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if err, _ = r.(error); err == nil {
				err = fmt.Errorf("panic with a %T: %v", r, r)
			}
		}
	}()
	k.Lock()
	k.Unlock()
	return nil
}

// Issue 55, item 3: Lock panicked only on a closed or nil lock. An
// acquisition the server refuses for good (an ACL it rejects, the lock
// path's ACL refusing this session's create, a lock path that is an
// ephemeral node) or that is too large for a request was retried, with a
// warning a second, for ever: the goroutine hung. Lock panics on each, with
// an error that names the lock's path and wraps the refusal.
func TestLockerPanicsOnARefusal(t *testing.T) {
	servers := zktest.Servers(t)
	s, admin := connect(t, servers), connect(t, servers)
	for _, c := range []struct {
		name string
		want error
		// lock makes the lock path as the case needs, and returns the
		// options of a lock on it.
		lock func(t *testing.T, p string) []tier.Option
	}{
		{"ACL the server rejects", zk.ErrInvalidACL, func(t *testing.T, p string) []tier.Option {
			bad := []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "not an address"}}
			return []tier.Option{tier.WithLockOptions(zklock.WithACL(bad))}
		}},
		{"create too large for a request", zklock.ErrInvalidOption, func(t *testing.T, p string) []tier.Option {
			huge := append(zk.WorldACL(zk.PermAll), zk.ACL{Perms: zk.PermRead, Scheme: "digest",
				ID: strings.Repeat("u", 1<<20) + ":" + strings.Repeat("h", 27) + "="})
			return []tier.Option{tier.WithLockOptions(zklock.WithACL(huge))}
		}},
		{"lock path's ACL refuses the create", zk.ErrNoAuth, func(t *testing.T, p string) []tier.Option {
			makePath(t, admin.Conn(), p, 0, zk.WorldACL(zk.PermRead))
			return nil
		}},
		{"lock path is ephemeral", zk.ErrNoChildrenForEphemerals, func(t *testing.T, p string) []tier.Option {
			makePath(t, admin.Conn(), p, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
			return nil
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := zktest.Path(t)
			l := newLock(t, s, p, c.lock(t, p)...)
			panicked := make(chan error, 1)
			go func() { panicked <- lockerPanic(l.Locker()) }()
			var err error
			select {
			case err = <-panicked:
			case <-time.After(20 * time.Second): // a refusal comes in a round trip or two
				l.Close() // Lock's next attempt panics with ErrClosed
				t.Fatalf("Lock still retrying after 20 s (it then panicked with %v once the lock was closed); want a panic wrapping %v", <-panicked, c.want)
			}
			if err == nil || !errors.Is(err, c.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("Lock: %v; want a panic with an error wrapping %v that names %s", err, c.want, p)
			}
			t.Logf("panic: %v", err)
		})
	}
}

// Lock retries what can pass: the server down when Lock is called, and
// back 1 s later; Lock returns with the lock, having panicked at nothing.
func TestLockerRetriesAnOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private ZooKeeper")
	}
	zc := zktest.Ensemble(t, 1)
	l := newLock(t, connect(t, zc.Addrs()), "/locker/outage")
	if err := zc.Stop(0); err != nil {
		t.Fatal(err)
	}
	locked := make(chan error, 1)
	go func() { locked <- lockerPanic(l.Locker()) }() // nil: it locked (and unlocked)
	time.Sleep(time.Second)
	if err := zc.Restart(ctxT(t, 60*time.Second), 0); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-locked:
		if err != nil {
			t.Fatalf("Lock across an outage panicked: %v", err)
		}
	case <-time.After(60 * time.Second):
		l.Close()
		t.Fatalf("Lock did not return within 60 s of the server's restart (then: %v)", <-locked)
	}
}

// makePath makes p's ancestors (persistent, open to all) and p itself,
// with flags and acl.
func makePath(t *testing.T, conn *zk.Conn, p string, flags int32, acl []zk.ACL) {
	t.Helper()
	for i := 1; i < len(p); i++ {
		if p[i] != '/' {
			continue
		}
		if _, err := conn.Create(p[:i], nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	if _, err := conn.Create(p, nil, flags, acl); err != nil {
		t.Fatal(err)
	}
}
