package zkcompat_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zkcompat"
)

// noServerAddr returns a loopback address nobody listens on: a port the
// kernel gave out and that was closed again.
func noServerAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// connNoServer connects a go-zookeeper client to addrs, which have no
// server: zk.Connect returns at once and the client keeps trying in the
// background. The drop-in's use of it and the connection end with the test.
func connNoServer(t *testing.T, addrs ...string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect(addrs, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		zkcompat.CloseConn(c)
		c.Close()
	})
	return c
}

// lockWithin starts lock and returns a channel that gives its error and
// how long it took; after d it fails the test, ending the wait with unblock.
func lockWithin(t *testing.T, d time.Duration, lock func() error, unblock func()) <-chan outcome {
	t.Helper()
	res := make(chan outcome, 1)
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- lock() }()
	go func() {
		select {
		case err := <-done:
			res <- outcome{err, time.Since(start)}
		case <-time.After(d):
			unblock()
			err, _ := zktest.Await(t, "the lock's return once unblocked", done)
			res <- outcome{fmt.Errorf("still blocked after %v (then unblocked: %w)", d, err), time.Since(start)}
		}
	}()
	return res
}

type outcome struct {
	err  error
	took time.Duration
}

// Issue 31, seam 2: with no reachable server, zk.Lock's Lock fails with
// zk.ErrNoServer once go-zookeeper has tried every server in turn (which
// fails the requests it queued; then it pauses a second and starts again).
// The drop-in's fails the same way, at the same moment, instead of waiting
// for ever: both on one connection, started together, three times; for
// one address and for two, all without a server. A cancelled context ends
// the drop-in's wait too.
func TestLockNoServer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waits out go-zookeeper's tries of every server, about 6 s")
	}
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d-servers", n), func(t *testing.T) {
			var addrs []string
			for range n {
				addrs = append(addrs, noServerAddr(t))
			}
			c := connNoServer(t, addrs...)
			for i := range 3 {
				g := zk.NewLock(c, zktest.Path(t), acl)
				d := zkcompat.NewLock(c, zktest.Path(t), acl)
				gr := lockWithin(t, 10*time.Second, g.Lock, c.Close)
				dr := lockWithin(t, 5*time.Second, d.Lock, func() { zkcompat.CloseConn(c) })
				gOut, dOut := <-gr, <-dr
				t.Logf("run %d, no server on %v: zk.Lock failed in %v (%v), zkcompat in %v (%v)",
					i, addrs, gOut.took, gOut.err, dOut.took, dOut.err)
				if !errors.Is(gOut.err, zk.ErrNoServer) {
					t.Fatalf("zk.Lock: %v; want zk.ErrNoServer (the premise of the test)", gOut.err)
				}
				if dOut.err != zk.ErrNoServer {
					t.Fatalf("zkcompat Lock: %v; want zk.ErrNoServer itself", dOut.err)
				}
				if err := d.Unlock(); !errors.Is(err, zk.ErrNotLocked) {
					t.Fatalf("Unlock after the failed Lock = %v, want zk.ErrNotLocked", err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := zkcompat.NewLock(c, zktest.Path(t), acl).LockContext(ctx)
			if !errors.Is(err, context.Canceled) && !errors.Is(err, zk.ErrNoServer) {
				t.Fatalf("LockContext with a cancelled context and no server: %v", err)
			}
		})
	}
}
