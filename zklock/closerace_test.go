package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// Session.Close racing acquisitions and releases in flight: their
// background work (a node's delete) may start after Close began to wait for
// the session's goroutines. With a sync.WaitGroup for those goroutines this
// panicked ("WaitGroup is reused before previous Wait has returned") or
// raced; now every round ends cleanly, nothing leaks (goleak), and no call
// panics.
func TestCloseRacingAcquisitions(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	// The lock path first: its creation is a request on the caller's
	// goroutine, which Close does not wait for, and go-zookeeper v1.0.4
	// races (in its own code) when a connection closes under a request.
	first := newLock(t, connect(t, servers), p)
	h, err := first.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 30; round++ {
		s := connect(t, servers)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			l, err := zklock.New(s, p)
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer l.Close()
				for ctx.Err() == nil {
					h, err := l.Acquire(ctx)
					if err != nil {
						return
					}
					_ = h.Release()
				}
			}()
		}
		time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		cancel()
		zktest.Wait(t, "the acquirers", &wg)
	}
}

// An acquisition whose ctx ends while the listing behind its create is in
// flight returns at once, and must not read what that listing's goroutine
// is still writing. The hook cancels ctx as the create's answer arrives,
// so the caller's await picks ctx.Done while the listing's request runs:
// with the results in named return values read on that path, the race
// detector saw the caller's read and the request goroutine's write with
// nothing ordering them (examples/jobs found it in CI first).
func TestCancelWhileListingBehindCreate(t *testing.T) {
	servers := zktest.Servers(t)
	s := connect(t, servers)
	p := zktest.Path(t)
	l := newLock(t, s, p)
	warm, err := l.Acquire(context.Background()) // the path made
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Release(); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 20; round++ {
		ctx, cancel := context.WithCancel(context.Background())
		zklock.SetCreatedHookForTest(cancel)
		h, err := l.Acquire(ctx)
		zklock.SetCreatedHookForTest(nil)
		cancel()
		if err == nil {
			// The answers won the race with ctx: a hold like any other.
			if err := h.Release(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Lock.Close right after a grant was published, before Acquire returned
// (issue 29, item 1): Close finds the hold and releases it, so Acquire must
// not return it as held. Before the fix Acquire returned (h, nil) for the
// released hold: its Release said ErrNotHeld, and its node was gone.
func TestCloseAfterPublishIsNotAGrant(t *testing.T) {
	servers := zktest.Servers(t)
	s, obs := connect(t, servers), connect(t, servers)
	p := zktest.Path(t)
	l, err := zklock.New(s, p)
	if err != nil {
		t.Fatal(err)
	}
	zklock.SetAcquiredHookForTest(func(got *zklock.Lock) {
		if got == l {
			_ = l.Close()
		}
	})
	defer zklock.SetAcquiredHookForTest(nil)
	h, err := l.Acquire(ctxT(t, 10*time.Second))
	zklock.SetAcquiredHookForTest(nil)
	if !errors.Is(err, zklock.ErrClosed) {
		t.Fatalf("Acquire with Close between its grant and its return = (%v, %v), want ErrClosed", h.Node(), err)
	}
	eventually(t, 5*time.Second, "no node left", func() bool { return len(children(t, obs.Conn(), p)) == 0 })
}

// Session.Close while a hold stands ends the hold (ErrSessionClosed) but
// warns of no loss: the program closed its own session (issue 31, seam 6).
// Before, every such Close logged "lock lost" at warning level.
func TestSessionCloseWhileHoldingWarnsOfNoLoss(t *testing.T) {
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s := connect(t, zktest.Servers(t), zklock.WithLogger(log))
	h, err := newLock(t, s, zktest.Path(t)).Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	<-h.Lost()
	if !errors.Is(h.Err(), zklock.ErrSessionClosed) {
		t.Fatalf("hold ended by %v, want ErrSessionClosed", h.Err())
	}
	if out := logs.String(); strings.Contains(out, "lock lost") {
		t.Errorf("Session.Close warned of a loss:\n%s", out)
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
		zktest.Wait(t, "the closers", &wg)
		if st := s.State(); st != zklock.StateClosed {
			t.Errorf("round %d: state %v after Close", round, st)
		}
	}
}

// TestRequestMeetsClose: requests of code built on the session
// (Session.Request) as the session closes. go-zookeeper v1.0.4's
// CreateContainer, queued as Close begins, reads its answer while the
// connection's receiving goroutine may still write it: the race detector
// failed make test's idle run 2 there (runonce making its root, abandoned
// by a scheduler's shutdown, as the test's session closed). Through
// Request, Close waits for the requests begun before it and refuses the
// others; each ends with its own outcome or ErrSessionClosed.
func TestRequestMeetsClose(t *testing.T) {
	servers := zktest.Servers(t)
	base := zktest.Path(t)
	setup := connect(t, servers)
	for _, p := range []string{path.Dir(path.Dir(base)), path.Dir(base), base} {
		if _, err := setup.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	for round := range 20 {
		s := connect(t, servers)
		var wg sync.WaitGroup
		for k := range 8 {
			wg.Go(func() {
				time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
				p := fmt.Sprintf("%s/%d-%d", base, round, k)
				err := s.Request(context.Background(), func(c *zk.Conn) error {
					_, err := c.CreateContainer(p, nil, zk.FlagContainer, zk.WorldACL(zk.PermAll))
					return err
				})
				if err != nil && !errors.Is(err, zklock.ErrSessionClosed) {
					t.Errorf("round %d: create %s: %v, want nil or ErrSessionClosed", round, p, err)
				}
			})
		}
		time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
		s.Close()
		zktest.Wait(t, "the requests", &wg)
		if err := s.Request(context.Background(), func(*zk.Conn) error { t.Error("a request ran after Close"); return nil }); !errors.Is(err, zklock.ErrSessionClosed) {
			t.Errorf("round %d: a request after Close: %v, want ErrSessionClosed", round, err)
		}
	}
}

// TestCloseAndARequestInProgress: Close of a Connect session waits for a
// Request in progress before it closes the connection (a second at most);
// Close of a NewSession session does not wait, since the caller closes
// the connection, and a request waiting for it to come back would hold
// Close for as long.
func TestCloseAndARequestInProgress(t *testing.T) {
	servers := zktest.Servers(t)
	for _, own := range []bool{true, false} {
		t.Run(map[bool]string{true: "Connect", false: "NewSession"}[own], func(t *testing.T) {
			s := connect(t, servers)
			if !own {
				conn, events, err := zk.Connect(servers, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(conn.Close)
				if s, err = zklock.NewSession(conn, events, zklock.WithLogger(quietLog)); err != nil {
					t.Fatal(err)
				}
			}
			started, release := make(chan struct{}), make(chan struct{})
			var released atomic.Bool
			ended := make(chan error, 1)
			go func() {
				ended <- s.Request(context.Background(), func(*zk.Conn) error {
					close(started)
					<-release
					return nil
				})
			}()
			<-started
			go func() {
				time.Sleep(100 * time.Millisecond)
				released.Store(true)
				close(release)
			}()
			s.Close()
			if got := released.Load(); got != own {
				t.Errorf("Close returned with the request released %v, want %v", got, own)
			}
			if err := <-ended; err != nil {
				t.Errorf("the request: %v", err)
			}
		})
	}
}
