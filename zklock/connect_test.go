package zklock_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// A Connect to a port where no server listens, with a context that has no
// deadline, fails within ConnectTimeout and says why: the dial error.
func TestConnectNoServerFailsFast(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waits out the connect timeout, about 10 s")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	start := time.Now()
	s, err := zklock.Connect(context.Background(), []string{" " + addr + " "}, zklock.WithLogger(quietLog))
	took := time.Since(start)
	if err == nil {
		s.Close()
		t.Fatal("Connect to a port with no server succeeded")
	}
	t.Logf("after %v: %v", took.Round(time.Millisecond), err)
	if took > zklock.ConnectTimeout+2*time.Second {
		t.Errorf("Connect took %v; the bound is %v", took, zklock.ConnectTimeout)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("error %q: want the deadline and the dial error (connection refused)", err)
	}
}

// Server addresses are trimmed; an empty one is refused.
func TestConnectServerList(t *testing.T) {
	if _, err := zklock.Connect(context.Background(), []string{"127.0.0.1:1", " "}); !errors.Is(err, zklock.ErrInvalidOption) {
		t.Errorf("an empty address: %v; want ErrInvalidOption", err)
	}
}

// Under NewSession the connection is the caller's: when the caller closes
// it mid-run, the session is over for good. An acquisition waiting in the
// queue ends with ErrSessionClosed, a hold is told it is lost, and Close
// returns.
func TestNewSessionEndsWhenConnClosed(t *testing.T) {
	servers := zktest.Servers(t)
	conn, events, err := zk.Connect(servers, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkQuiet{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	eventually(t, 10*time.Second, "a session", func() bool { return conn.State() == zk.StateHasSession })
	s, err := zklock.NewSession(conn, events, zklock.WithSessionTimeout(10*time.Second), zklock.WithLogger(quietLog))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other := connect(t, servers)
	ctx := ctxT(t, 30*time.Second)
	p := zktest.Path(t)
	blocker, err := newLock(t, other, p+"/contended").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Release()
	held, err := newLock(t, s, p+"/held").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiting := goAcquire(ctx, newLock(t, s, p+"/contended"))
	eventually(t, 5*time.Second, "the waiter queued", func() bool { return len(children(t, other.Conn(), p+"/contended")) == 2 })

	conn.Close()
	closedAt := time.Now()
	select {
	case r := <-waiting:
		if !errors.Is(r.err, zklock.ErrSessionClosed) {
			t.Errorf("the waiting Acquire: %v; want ErrSessionClosed", r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting Acquire did not end when the connection was closed")
	}
	select {
	case <-held.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("the hold was not told its connection was closed")
	}
	t.Logf("waiter and hold told %v after the close", time.Since(closedAt).Round(time.Millisecond))
	if _, err := zklock.New(s, p+"/after"); !errors.Is(err, zklock.ErrSessionClosed) {
		t.Errorf("New after the close: %v; want ErrSessionClosed", err)
	}
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Session.Close did not return")
	}
}

// A Session closed right after it reconnected lets its connection go at
// once. The tap holds a connection's first response for setWatches
// (wire.go); while closing it waited for the setWatches or the close
// without a bound, and the close comes only once that same loop reads the
// server's answer (or a ping fails): the connection's goroutines stayed
// until the next ping, a third of the session timeout later.
func TestCloseRightAfterReconnect(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a drop and a reconnection, about 2 s")
	}
	px := proxyTo(t, zktest.Servers(t)[0])
	ignore := goleak.IgnoreCurrent()
	s, err := zklock.Connect(ctxT(t, 10*time.Second), []string{px.Addr()}, zklock.WithSessionTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	id := s.SessionID()
	px.Reset()
	eventually(t, 10*time.Second, "the connection down", func() bool { return s.Conn().State() != zk.StateHasSession })
	eventually(t, 10*time.Second, "the session back", func() bool {
		return s.Conn().State() == zk.StateHasSession && s.SessionID() == id
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, ignore)
}

// A hold acquired through a session wrapped before its connection had a
// session is not spuriously lost.
func TestNewSessionBeforeHasSession(t *testing.T) {
	conn, events, err := zk.Connect(zktest.Servers(t), 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkQuiet{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	s, err := zklock.NewSession(conn, events, zklock.WithLogger(quietLog))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := zklock.New(s, zktest.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := ctxT(t, 20*time.Second)
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Lost():
		t.Fatalf("hold lost at once: %v", h.Err())
	case <-time.After(300 * time.Millisecond):
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
}

// A session timeout the server does not grant (issue 39, item 5): asked
// for 100 ms, a server with 200 ms ticks grants at least 2 ticks, 400 ms; the
// session warns once, naming both, so that an operator knows how long a
// crashed holder's lock takes to pass on. Asked for what the server
// grants, it says nothing. (Before: nothing was logged.)
func TestGrantedTimeoutLogged(t *testing.T) {
	servers := zktest.Servers(t)
	for _, c := range []struct {
		asked time.Duration
		warn  bool
	}{{100 * time.Millisecond, true}, {2 * time.Second, false}} {
		var logs syncBuffer
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		s := connect(t, servers, zklock.WithSessionTimeout(c.asked), zklock.WithLogger(log))
		_ = s.Close()
		out := logs.String()
		if got := strings.Count(out, "granted another session timeout"); c.warn && (got != 1 || !strings.Contains(out, "asked=100ms granted=400ms")) {
			t.Errorf("asked %v: want one warning naming asked=100ms granted=400ms; logged:\n%s", c.asked, out)
		} else if !c.warn && got != 0 {
			t.Errorf("asked %v, granted as asked: logged:\n%s", c.asked, out)
		}
	}
}
