package zklock

import (
	"encoding/binary"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// wireTap observes the bytes go-zookeeper writes to its connection, for two
// things a synchronous client cannot otherwise know:
//
//   - that a request has left go-zookeeper before its reply (pipelining: a
//     request go-zookeeper writes after that moment goes out after it on the
//     same TCP stream, since the connection sends in the order written, and
//     ZooKeeper applies a session's requests in the order it receives
//     them). A pipelined request registers its key, the first path it
//     names, and each write finds its waiter by that path in O(1);
//   - when each write began (the lease: a successful request proves the
//     session was alive at the leader after it was sent, see lease.go).
//     Every write's start goes into a ring by write number.
//
// go-zookeeper writes each request with a single Write (tapconn.go queues
// it for the socket), from one goroutine at a time (the connecting goroutine writes the connect request before the
// send loop starts; the send loop writes everything else, in queue order).
type wireTap struct {
	dial func(network, address string, timeout time.Duration) (net.Conn, error) // nil: net.DialTimeout

	mu      sync.Mutex
	waiters map[string]*wireWaiter // by the first path the request names
	n       atomic.Int32           // len(waiters), read without mu on every write

	ringMu sync.Mutex
	writes int64           // writes begun
	ring   [ringSize]int64 // unix ns when write w began, at ring[w%ringSize]

	// timeoutMs is the session timeout the server granted in its last
	// connect response. go-zookeeper keeps it unexported, and the loss
	// bounds (see lease.go) must use the negotiated value, which the server
	// may have lowered below the one asked for.
	timeoutMs atomic.Int32

	// out counts the requests of the session's locks handed to
	// go-zookeeper and not answered yet (Session.run): with few out, a
	// write has nothing to batch with, and goes out on the writer's own
	// goroutine (see tappedConn.Write).
	out atomic.Int32

	dials     atomic.Int32          // connections made; the first has no watches to re-arm
	dialErr   atomic.Pointer[error] // the last dial's error; nil after a dial that worked
	log       *slog.Logger
	closing   chan struct{} // closed when the Session starts closing
	closeOnce sync.Once

	// Test seams: written counts every request written, by opcode; onWrite,
	// when set, runs before each write and may fail it (the connection is
	// then closed, as a real failed write leaves it).
	written [32]atomic.Int64
	onWrite atomic.Pointer[func(op int32, b []byte) error]
}

// ringSize bounds how many writes a request's reply may come after its
// own write and still renew the lease: the requests in flight are bounded
// well below it (see inflight).
const ringSize = 8192

type wireWaiter struct {
	ops  []int32
	sent chan struct{} // closed when the request is written
}

// ZooKeeper request opcodes the session uses.
const (
	opCreate       int32 = 1
	opDelete       int32 = 2
	opGetData      int32 = 4
	opSetData      int32 = 5
	opSync         int32 = 9
	opGetChildren2 int32 = 12
	opMulti        int32 = 14
	// opSetWatches is the request go-zookeeper sends on a new connection
	// to re-arm the watches of the previous one.
	opSetWatches int32 = 101
)

// expect registers interest in the next request written with one of the
// opcodes ops whose first path is key (a create's path, the first op's of a
// multi). Keys are unique: a protected name's GUID, a node's path.
func (t *wireTap) expect(key string, ops ...int32) *wireWaiter {
	w := &wireWaiter{ops: ops, sent: make(chan struct{})}
	t.mu.Lock()
	if t.waiters == nil {
		t.waiters = make(map[string]*wireWaiter)
	}
	t.waiters[key] = w
	t.n.Store(int32(len(t.waiters)))
	t.mu.Unlock()
	return w
}

// forget drops a waiter whose request completed or failed without being
// seen (for example because the connection closed first).
func (t *wireTap) forget(key string, w *wireWaiter) {
	t.mu.Lock()
	if t.waiters[key] == w {
		delete(t.waiters, key)
		t.n.Store(int32(len(t.waiters)))
	}
	t.mu.Unlock()
}

// mark returns how many writes have begun: a request queued after mark is
// written as a later write.
func (t *wireTap) mark() int64 {
	t.ringMu.Lock()
	defer t.ringMu.Unlock()
	return t.writes
}

// firstWriteAfter returns when the first write after mark began and when
// the write before it began (zero if none), or ok false when that write has
// not begun or has left the ring.
func (t *wireTap) firstWriteAfter(mark int64) (at, prev time.Time, ok bool) {
	t.ringMu.Lock()
	defer t.ringMu.Unlock()
	w := mark + 1
	if w > t.writes || t.writes-w >= ringSize-1 {
		return time.Time{}, time.Time{}, false
	}
	at = time.Unix(0, t.ring[w%ringSize])
	if mark > 0 {
		prev = time.Unix(0, t.ring[mark%ringSize])
	}
	return at, prev, true
}

// began records the start of a write.
func (t *wireTap) began(start time.Time) {
	t.ringMu.Lock()
	t.writes++
	t.ring[t.writes%ringSize] = start.UnixNano()
	t.ringMu.Unlock()
}

// lastDialErr returns the error of the last dial, if it failed.
func (t *wireTap) lastDialErr() error {
	if p := t.dialErr.Load(); p != nil {
		return *p
	}
	return nil
}

// opcode returns the opcode of the request framed in b (length, xid,
// opcode, then its fields), or -1.
func opcode(b []byte) int32 {
	if len(b) < 12 {
		return -1
	}
	return int32(binary.BigEndian.Uint32(b[8:12]))
}

// firstPath returns the first path the request framed in b names: its own
// (every request of ours begins with its path), or for a multi its first
// op's (after the 9-byte header of type, done flag and error).
func firstPath(b []byte, op int32) []byte {
	off := 12
	if op == opMulti {
		off += 9
	}
	if len(b) < off+4 {
		return nil
	}
	n := int(int32(binary.BigEndian.Uint32(b[off:])))
	if n < 0 || len(b) < off+4+n {
		return nil
	}
	return b[off+4 : off+4+n]
}

// wrote tells the waiter of the request just written, if any.
func (t *wireTap) wrote(b []byte) {
	op := opcode(b)
	if op >= 0 && int(op) < len(t.written) {
		t.written[op].Add(1)
	}
	if t.n.Load() == 0 || op < 0 {
		return
	}
	p := firstPath(b, op)
	if p == nil {
		return
	}
	t.mu.Lock()
	w := t.waiters[string(p)] // no allocation: the compiler looks up string(bytes) in place
	if w != nil && slices.Contains(w.ops, op) {
		delete(t.waiters, string(p))
		t.n.Store(int32(len(t.waiters)))
	} else {
		w = nil
	}
	t.mu.Unlock()
	if w != nil {
		close(w.sent)
	}
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
			// A warning the first time (an operator must see that the
			// servers cannot be reached), detail afterwards: go-zookeeper
			// tries again every second or so.
			if t.dialErr.Swap(&err) == nil && t.log != nil {
				t.log.Warn("cannot reach ZooKeeper", "server", address, "err", err)
			} else if t.log != nil {
				t.log.Debug("cannot reach ZooKeeper", "server", address, "err", err)
			}
			return nil, err
		}
		t.dialErr.Store(nil)
		tc := &tappedConn{Conn: c, tap: t, watchesOut: make(chan struct{}), closed: make(chan struct{})}
		tc.wcond.L = &tc.wmu
		// A client's first connection has no watches to re-arm.
		tc.released = t.dials.Add(1) == 1
		return tc, nil
	}
}
