package zklock_test

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// socket is a dialer whose connections count the socket writes and the
// request frames in them, can hold writes (a busy socket) and can fail
// the next one.
type socket struct {
	mu     sync.Mutex
	writes int // Write calls on the socket
	frames int // request frames in them
	conns  int // connections dialed
	held   chan struct{}
	fail   atomic.Bool
}

func (k *socket) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.conns++
	k.mu.Unlock()
	return &socketConn{Conn: c, k: k}, nil
}

// hold makes writes wait until the returned function is called.
func (k *socket) hold() (let func()) {
	ch := make(chan struct{})
	k.mu.Lock()
	k.held = ch
	k.mu.Unlock()
	return func() {
		k.mu.Lock()
		k.held = nil
		k.mu.Unlock()
		close(ch)
	}
}

func (k *socket) counts() (writes, frames int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.writes, k.frames
}

type socketConn struct {
	net.Conn
	k *socket
}

func (c *socketConn) Write(b []byte) (int, error) {
	c.k.mu.Lock()
	held := c.k.held
	c.k.writes++
	for f := b; len(f) >= 4; {
		n := 4 + int(binary.BigEndian.Uint32(f[:4]))
		c.k.frames++
		f = f[min(n, len(f)):]
	}
	c.k.mu.Unlock()
	if held != nil {
		<-held
	}
	if c.k.fail.CompareAndSwap(true, false) {
		return 0, errors.New("socket: write failed")
	}
	return c.Conn.Write(b)
}

// TestRequestsBehindABusySocketGoTogether: requests written while the
// socket is still busy with an earlier one leave in one system call, in
// the order written, and are all answered. (Writes are queued when many
// requests of the session are out; here always.)
func TestRequestsBehindABusySocketGoTogether(t *testing.T) {
	defer zklock.SetBatchFromForTest(0)()
	var k socket
	s := connect(t, zktest.Servers(t), zklock.WithDialer(k.dial))
	const p = "/"
	let := k.hold()
	w0, f0 := k.counts()
	const n = 32
	var wg sync.WaitGroup
	errs := make(chan error, n)
	before := zklock.Written(s, zklock.OpGetChildren2)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := s.Conn().Children(p)
			errs <- err
		}()
	}
	// Every request is written by go-zookeeper (the tap counts it) while
	// the socket still holds the first.
	eventually(t, 10*time.Second, "every listing written", func() bool {
		return zklock.Written(s, zklock.OpGetChildren2)-before == n
	})
	let()
	zktest.Wait(t, "the listings", &wg)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	w, f := k.counts()
	if f-f0 < n || w-w0 > 2 {
		t.Fatalf("%d requests in %d socket writes; want the %d behind the held one in one write", f-f0, w-w0, n-1)
	}
}

// TestFailedSocketWriteReconnects: a socket write that fails, after
// go-zookeeper's Write returned (queued) or in it (written at once),
// closes the connection, as a failed write of its own would: the hold is
// told, the session comes back on a new connection, and the lock is taken
// again.
func TestFailedSocketWriteReconnects(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: failed writes and reconnections, about 3 s")
	}
	for _, mode := range []struct {
		name string
		from int32
	}{{"queued", 0}, {"written at once", 1 << 20}} {
		t.Run(mode.name, func(t *testing.T) {
			defer zklock.SetBatchFromForTest(mode.from)()
			failedWriteReconnects(t)
		})
	}
}

func failedWriteReconnects(t *testing.T) {
	var k socket
	s := connect(t, zktest.Servers(t), zklock.WithDialer(k.dial))
	ctx := ctxT(t, 20*time.Second)
	l := newLock(t, s, zktest.Path(t))
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id := s.SessionID()
	k.fail.Store(true)
	if _, _, err := s.Conn().Exists("/"); err == nil {
		t.Fatal("a request whose write failed was answered")
	}
	select {
	case <-h.Lost():
	case <-ctx.Done():
		t.Fatal("the hold was not told the connection went")
	}
	eventually(t, 10*time.Second, "a new connection", func() bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		return k.conns == 2
	})
	h, err = l.Acquire(ctx)
	if err != nil {
		t.Fatalf("after the reconnect: %v", err)
	}
	if s.SessionID() != id {
		t.Fatalf("session %x after the reconnect; want %x, the same", s.SessionID(), id)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
}
