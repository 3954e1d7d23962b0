package zklock

import (
	"bytes"
	"encoding/binary"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// wireTap observes the bytes go-zookeeper writes to its connection, so that
// a caller can learn that one of its requests is on the wire without waiting
// for the reply. go-zookeeper writes each request with a single Write from
// its one send loop, in the order requests were queued; once a request's
// bytes are written, anything queued afterwards is written after it on the
// same TCP stream, and ZooKeeper applies a session's requests in the order
// it receives them. That is what makes pipelining safe here.
type wireTap struct {
	dial func(network, address string, timeout time.Duration) (net.Conn, error) // nil: net.DialTimeout

	mu      sync.Mutex
	waiters map[*wireWaiter]struct{}
	n       atomic.Int32 // len(waiters), read without the lock on every Write

	// timeoutMs is the session timeout the server granted in its last
	// connect response. go-zookeeper keeps it unexported, and the loss
	// bounds (see lease.go) must use the negotiated value, which the server
	// may have lowered below the one asked for.
	timeoutMs atomic.Int32

	lastWrite atomic.Int64  // unix ns when the latest write began
	dials     atomic.Int32  // connections made; the first has no watches to re-arm
	closing   chan struct{} // closed when the Session starts closing
	closeOnce sync.Once

	// Test seams: written counts every request written, by opcode; onWrite,
	// when set, runs before each write and may fail it (the connection is
	// then closed, as a real failed write leaves it).
	written [32]atomic.Int64
	onWrite atomic.Pointer[func(op int32, b []byte) error]
}

type wireWaiter struct {
	key  []byte
	ops  []int32
	sent chan struct{}
	at   time.Time // when the matching request's write began; written before sent is closed
	prev time.Time // when the write before it began (zero if none); written before sent is closed
}

// ZooKeeper request opcodes the tap recognizes.
const (
	opCreate int32 = 1
	opDelete int32 = 2
	opSync   int32 = 9
	opMulti  int32 = 14
	// opSetWatches is the request go-zookeeper sends on a new connection
	// to re-arm the watches of the previous one.
	opSetWatches int32 = 101
)

// expect registers interest in the next request written with one of the
// opcodes ops whose bytes contain key. Matching the opcode matters: other
// requests name the same node (a getData of it, say).
func (t *wireTap) expect(key string, ops ...int32) *wireWaiter {
	w := &wireWaiter{key: []byte(key), ops: ops, sent: make(chan struct{})}
	t.mu.Lock()
	if t.waiters == nil {
		t.waiters = make(map[*wireWaiter]struct{})
	}
	t.waiters[w] = struct{}{}
	t.n.Store(int32(len(t.waiters)))
	t.mu.Unlock()
	return w
}

// forget drops a waiter whose request completed or failed without being
// seen (for example because the connection closed first).
func (t *wireTap) forget(w *wireWaiter) {
	t.mu.Lock()
	delete(t.waiters, w)
	t.n.Store(int32(len(t.waiters)))
	t.mu.Unlock()
}

// opcode returns the opcode of the request framed in b (length, xid,
// opcode, then its fields), or -1.
func opcode(b []byte) int32 {
	if len(b) < 12 {
		return -1
	}
	return int32(binary.BigEndian.Uint32(b[8:12]))
}

func (t *wireTap) wrote(b []byte, start, prev time.Time) {
	op := opcode(b)
	if op >= 0 && int(op) < len(t.written) {
		t.written[op].Add(1)
	}
	if t.n.Load() == 0 || op < 0 {
		return
	}
	t.mu.Lock()
	for w := range t.waiters {
		if slices.Contains(w.ops, op) && bytes.Contains(b, w.key) {
			w.at, w.prev = start, prev
			close(w.sent)
			delete(t.waiters, w)
		}
	}
	t.n.Store(int32(len(t.waiters)))
	t.mu.Unlock()
}

// dialer returns a go-zookeeper Dialer whose connections report writes.
func (t *wireTap) dialer() func(network, address string, timeout time.Duration) (net.Conn, error) {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		dial := t.dial
		if dial == nil {
			dial = net.DialTimeout
		}
		c, err := dial(network, address, timeout)
		if err != nil {
			return nil, err
		}
		tc := &tappedConn{Conn: c, tap: t, watchesOut: make(chan struct{}), closed: make(chan struct{})}
		// A client's first connection has no watches to re-arm.
		tc.released = t.dials.Add(1) == 1
		return tc, nil
	}
}

type tappedConn struct {
	net.Conn
	tap *wireTap

	// The first bytes read on a connection are the server's connect
	// response: length, protocol version, timeout (ms), session id,
	// password. go-zookeeper's connecting goroutine reads them, in exactly
	// two reads (the length, then the rest), before any other reader
	// exists; hdr collects the first 12 bytes.
	hdr      [12]byte
	nread    int       // bytes of the connect response read so far
	respLen  int       // its total length, once known
	shookAt  time.Time // when the connect response was read in full
	released bool      // responses flow freely (see Read)

	watchesOut     chan struct{} // closed when setWatches is written
	watchesOutOnce sync.Once
	closed         chan struct{} // closed by Close
	closeOnce      sync.Once
}

// setWatchesWait bounds how long the first response after a connect is
// held for setWatches (see Read): longer than go-zookeeper needs to send
// it, short enough not to matter when it has no watches to send.
const setWatchesWait = 250 * time.Millisecond

// Read passes the bytes on, noting the negotiated session timeout from the
// connect response.
//
// It also works around a data race in go-zookeeper v1.0.4 (an unsynchronized
// read of Conn.lastZxid when it re-arms watches on a new connection,
// against the receive loop's write of it for every response; upstream PR
// #35). The race detector sees the two ordered only if the response was
// read after a write that follows the re-arming, so the first response on
// a connection is held until go-zookeeper has written its setWatches
// request (or, when it has no watches and so sends none, for at most
// setWatchesWait). The write closes watchesOut, this Read receives from
// it: that is the happens-before edge.
func (c *tappedConn) Read(b []byte) (int, error) {
	if c.respLen > 0 && c.nread >= c.respLen && !c.released {
		c.released = true
		t := time.NewTimer(time.Until(c.shookAt.Add(setWatchesWait)))
		select {
		case <-c.watchesOut:
		case <-c.closed:
		case <-t.C:
			// No setWatches yet: most likely there are no watches to
			// re-arm. But when the session is closing, go-zookeeper drops
			// a setWatches it had queued (after reading lastZxid) instead
			// of writing it: then wait for the write or the close, since
			// responses on a closing connection matter to nobody.
			select {
			case <-c.tap.closing:
				select {
				case <-c.watchesOut:
				case <-c.closed:
				}
			default:
			}
		}
		t.Stop()
	}
	n, err := c.Conn.Read(b)
	if c.respLen == 0 || c.nread < c.respLen {
		if c.nread < len(c.hdr) && n > 0 {
			copy(c.hdr[c.nread:], b[:n])
		}
		c.nread += n
		if c.respLen == 0 && c.nread >= 4 {
			c.respLen = 4 + int(binary.BigEndian.Uint32(c.hdr[0:4]))
		}
		if c.nread >= 12 && c.nread-n < 12 {
			if ms := int32(binary.BigEndian.Uint32(c.hdr[8:12])); ms > 0 {
				c.tap.timeoutMs.Store(ms)
			}
		}
		if c.respLen > 0 && c.nread >= c.respLen {
			c.shookAt = time.Now()
		}
	}
	return n, err
}

// Close closes the connection and ends a Read's wait for setWatches.
func (c *tappedConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

func (c *tappedConn) Write(b []byte) (int, error) {
	if fn := c.tap.onWrite.Load(); fn != nil {
		if err := (*fn)(opcode(b), b); err != nil {
			c.Conn.Close()
			return 0, err
		}
	}
	start := time.Now() // before the bytes leave: no later than the server can see them
	var prev time.Time
	if ns := c.tap.lastWrite.Swap(start.UnixNano()); ns != 0 {
		prev = time.Unix(0, ns)
	}
	n, err := c.Conn.Write(b)
	if opcode(b) == opSetWatches {
		c.watchesOutOnce.Do(func() { close(c.watchesOut) })
	}
	if err == nil {
		c.tap.wrote(b[:n], start, prev)
	}
	return n, err
}
