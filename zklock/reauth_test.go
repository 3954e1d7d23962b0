package zklock_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// Issue 70: go-zookeeper v1.0.4 re-sends the credentials on each new
// connection (resendZkAuth) with room for one answer, and a write of them
// that failed was answered twice (sendData's error, then flushRequests'):
// the second blocked its loop for good, in flushRequests, and the session
// never reconnected; every later request waited for ever. The tap reports
// that write as done instead, and the loop goes on to the next connection.
func TestFailedReauthWriteReconnects(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: failed writes and reconnections, about 2 s")
	}
	s := connect(t, zktest.Servers(t), zklock.WithDigestAuth("reauth", "secret"))
	l := newLock(t, s, zktest.Path(t))
	h, err := l.Acquire(ctxT(t, 20*time.Second)) // the credentials are in go-zookeeper's now
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}

	const opSetAuth = 100 // go-zookeeper's
	var cut, failed atomic.Bool
	zklock.SetWriteHook(s, func(op int32, _ []byte) error {
		switch {
		case op == zklock.OpExists && cut.CompareAndSwap(false, true):
			return errors.New("test: the connection is cut")
		case op == opSetAuth && cut.Load() && failed.CompareAndSwap(false, true):
			return errors.New("test: the credentials' write fails on the new connection")
		}
		return nil
	})
	defer zklock.SetWriteHook(s, nil)
	conn := s.Conn()
	_, _, _ = conn.Exists("/") // fails, and the connection with it
	eventually(t, 20*time.Second, "the credentials re-sent on a new connection", failed.Load)

	// A request is answered again, on a later connection.
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := existsWithin(t, conn, time.Until(deadline))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request answered 20 s after the failed write of the credentials: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if h, err = l.Acquire(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
}

// existsWithin is conn.Exists("/"), failing the test with every goroutine's
// stack when it is not answered within d.
func existsWithin(t *testing.T, conn *zk.Conn, d time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, _, err := conn.Exists("/")
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("an exists unanswered after %v; the goroutines:\n%s", d, zktest.Goroutines())
		return nil
	}
}
