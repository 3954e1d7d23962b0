package tier_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// TestLockerWaitsAcrossReconnectionsUnderADigestACL: tier's sync.Locker
// waits across several reconnections of its session under a lock ACL that
// lets only the fleet's identity read, and locks once the holder lets go;
// nothing panics. On each new connection the session's re-listings went
// ahead of go-zookeeper's re-sent credentials, were refused zk.ErrNoAuth,
// and Locker.Lock, which takes ErrNoAuth for a refusal no retry can
// change, panicked the process (the connection's order: zklock's
// internal/wire, order.go).
func TestLockerWaitsAcrossReconnectionsUnderADigestACL(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: reconnections under a digest ACL, about 6 s")
	}
	servers := zktest.Servers(t)
	px, err := faultproxy.New(servers[0])
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	auth := zklock.WithDigestAuth(zktest.FleetUser, zktest.FleetPassword)
	holder := connect(t, servers, auth)
	waiter := connect(t, []string{px.Addr()}, auth)
	acl := zk.DigestACL(zk.PermAll, zktest.FleetUser, zktest.FleetPassword)
	root := zktest.ACLRoot(t, holder.Conn(), acl)
	ctx := ctxT(t, 2*time.Minute)

	const keys = 4
	type hold struct {
		l    *tier.Lock
		held context.Context
	}
	var held []hold
	locked := make(chan error, keys)
	for i := range keys {
		path := fmt.Sprintf("%s/key-%d", root, i)
		l := newLock(t, holder, path, tier.WithLockOptions(zklock.WithACL(acl)))
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, hold{l, h})
		k := newLock(t, waiter, path, tier.WithLockOptions(zklock.WithACL(acl))).Locker()
		go func() {
			defer func() {
				if r := recover(); r != nil {
					locked <- fmt.Errorf("Locker.Lock panicked: %v", r)
				}
			}()
			k.Lock()
			k.Unlock()
			locked <- nil
		}()
	}
	eventually(t, 20*time.Second, "every Locker queued", func() bool {
		for i := range keys {
			if len(children(t, holder.Conn(), fmt.Sprintf("%s/key-%d", root, i))) != 2 {
				return false
			}
		}
		return true
	})
	for range 4 {
		px.DropAll()
		time.Sleep(1500 * time.Millisecond) // go-zookeeper dials again, the waiters list again
		select {
		case err := <-locked:
			t.Fatalf("a Locker returned while its key was held: %v", err)
		default:
		}
	}
	for _, h := range held {
		if err := h.l.Release(h.held); err != nil {
			t.Fatal(err)
		}
	}
	for range keys {
		if err := <-locked; err != nil {
			t.Fatal(err)
		}
	}
}
