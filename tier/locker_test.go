package tier_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

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
