package zklock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

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

// Issue 21, item 5: taking the read lock while holding the write lock
// (the documented downgrade) must not wait behind a writer of another
// process that waits for our write lock: that would deadlock.
func TestRWDowngradeNeverWaitsBehindForeignWriter(t *testing.T) {
	servers := zktest.Servers(t)
	a, b, obs := connect(t, servers), connect(t, servers), connect(t, servers)
	path := zktest.Path(t)
	ra, err := zklock.NewRWLock(a, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	rb, err := zklock.NewRWLock(b, path)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	ctx := ctxT(t, 30*time.Second)
	wa, err := ra.WriteLock().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bDone := goAcquire(ctx, rb.WriteLock())
	eventually(t, 10*time.Second, "B's writer queued", func() bool { return len(children(t, obs.Conn(), path)) == 2 })
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	start := time.Now()
	rh, err := ra.ReadLock().Acquire(rctx)
	cancel()
	took := time.Since(start)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("downgrade behind a foreign writer waited %v for a lock that could never come", took.Round(time.Millisecond))
	} else if err == nil {
		t.Errorf("downgrade granted while a foreign writer precedes the read node")
		_ = rh.Release()
	}
	if !errors.Is(err, zklock.ErrDowngradeBlocked) {
		t.Errorf("downgrade behind a foreign writer: %v; want ErrDowngradeBlocked", err)
	}
	eventually(t, 5*time.Second, "no read node left: our write node and B's", func() bool {
		return len(children(t, obs.Conn(), path)) == 2
	})
	if err := wa.Release(); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-bDone:
		if r.err != nil {
			t.Fatalf("B: %v", r.err)
		}
		_ = r.h.Release()
	case <-time.After(10 * time.Second):
		t.Fatal("B never granted after A released")
	}
}

// Issue 21, item 6: Close may be called from several goroutines at once.
func TestConcurrentSessionClose(t *testing.T) {
	servers := zktest.Servers(t)
	for round := range 100 {
		s := connect(t, servers, zklock.WithStateListener(func(zklock.State) {}))
		l := newLock(t, s, zktest.Path(t))
		if _, err := l.Acquire(ctxT(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := s.Close(); err != nil {
					t.Errorf("round %d: Close: %v", round, err)
				}
			}()
		}
		wg.Wait()
		if st := s.State(); st != zklock.StateClosed {
			t.Errorf("round %d: state %v after Close", round, st)
		}
	}
}

// Issue 21, item 10: revocation requests wait for the session's
// credentials, as lock requests do: under NewSession they are sent in the
// background, and a request that overtakes them is made anonymously.
func TestRevokeWaitsForCredentials(t *testing.T) {
	servers := zktest.Servers(t)
	fleet := connect(t, servers, zklock.WithDigestAuth(fleetUser, fleetPassword))
	root := aclRoot(t, fleet, fleetACL())
	l := newLock(t, fleet, root+"/job", zklock.WithACL(fleetACL()), zklock.WithRevocable())
	ctx := ctxT(t, 20*time.Second)
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	node := h.Node() // the fleet's: the world may read it, not write it
	restore := zklock.SetAuthDelayForTest(300 * time.Millisecond)
	defer restore()
	conn, _, err := zk.Connect(servers, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	s, err := zklock.NewSession(conn, nil, zklock.WithLogger(quietLog), zklock.WithDigestAuth(fleetUser, fleetPassword))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := zklock.RevokeNode(ctx, s, node); err != nil {
		t.Fatalf("RevokeNode right after NewSession with credentials: %v", err)
	}
	select {
	case <-h.Revoked():
	case <-time.After(5 * time.Second):
		t.Fatal("the holder never heard of the revocation")
	}
}

// The size limits are exact, and what they admit works: a lock path of
// 4000 bytes and a label of 60 KiB are acquired (their nodes made and
// deleted on the server); one byte more of path, or a node's data past
// 64 KiB, is refused before anything is sent.
func TestSizeLimitsExact(t *testing.T) {
	s := connect(t, zktest.Servers(t))
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
