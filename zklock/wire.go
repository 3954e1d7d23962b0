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
	mu      sync.Mutex
	waiters map[*wireWaiter]struct{}
	n       atomic.Int32 // len(waiters), read without the lock on every Write

	// timeoutMs is the session timeout the server granted in its last
	// connect response. go-zookeeper keeps it unexported, and the loss
	// bounds (see lease.go) must use the negotiated value, which the server
	// may have lowered below the one asked for.
	timeoutMs atomic.Int32

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
}

// ZooKeeper request opcodes the tap recognizes.
const (
	opCreate int32 = 1
	opDelete int32 = 2
	opSync   int32 = 9
	opMulti  int32 = 14
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

func (t *wireTap) wrote(b []byte) {
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
		c, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return &tappedConn{Conn: c, tap: t}, nil
	}
}

type tappedConn struct {
	net.Conn
	tap *wireTap

	// The first bytes read on a connection are the server's connect
	// response: length, protocol version, timeout (ms), session id,
	// password. hdr collects its first 12 bytes; only go-zookeeper's
	// connecting goroutine reads them, before any other reader exists.
	hdr  [12]byte
	nhdr int
}

// Read passes the bytes on, noting the negotiated session timeout from the
// connect response.
func (c *tappedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if c.nhdr < len(c.hdr) && n > 0 {
		c.nhdr += copy(c.hdr[c.nhdr:], b[:n])
		if c.nhdr == len(c.hdr) {
			if ms := int32(binary.BigEndian.Uint32(c.hdr[8:12])); ms > 0 {
				c.tap.timeoutMs.Store(ms)
			}
		}
	}
	return n, err
}

func (c *tappedConn) Write(b []byte) (int, error) {
	if fn := c.tap.onWrite.Load(); fn != nil {
		if err := (*fn)(opcode(b), b); err != nil {
			c.Conn.Close()
			return 0, err
		}
	}
	n, err := c.Conn.Write(b)
	if err == nil {
		c.tap.wrote(b[:n])
	}
	return n, err
}
