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

func (t *wireTap) wrote(b []byte) {
	if t.n.Load() == 0 {
		return
	}
	// A request is framed as length, xid, opcode, then its fields.
	if len(b) < 12 {
		return
	}
	op := int32(binary.BigEndian.Uint32(b[8:12]))
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
}

func (c *tappedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err == nil {
		c.tap.wrote(b[:n])
	}
	return n, err
}
