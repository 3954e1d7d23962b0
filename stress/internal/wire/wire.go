// Package wire counts the ZooKeeper requests a stress worker sends, by
// opcode, as go-zookeeper writes them, and reads the session timeout the
// server granted. Every implementation that runs on a go-zookeeper
// connection (tier and zklock through zklock.WithDialer, gozk and zkcompat
// through zk.WithDialer) opens its connections through one [Counter]'s
// [Counter.Dialer], so that requests per acquisition are counted the same
// way for all of them, kind by kind, on the client's side. A client of
// another server (the redsync implementation's go-redis client) counts
// its requests into the same Counter with [Counter.Count].
//
// go-zookeeper v1.0.4 writes each request with one Write from its send
// loop (zklock's connections batch several into one): a 4-byte length,
// the xid, then the opcode (bytes 8 to 12 of the frame, big-endian). The first write on a connection is the connect request,
// which has no opcode there, and the first bytes the server sends back
// are the connect response: length, protocol version, then the negotiated
// timeout in ms (bytes 8 to 12). Counting costs an atomic add per write.
package wire

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierlock/tierlock/stress/internal/proto"
)

// Counter counts the requests written on the connections it dialed.
type Counter struct {
	ops       [128]atomic.Int64 // by opcode
	other     atomic.Int64      // opcodes outside ops (closeSession is -11)
	timeoutMs atomic.Int64      // from the latest connect response
	conns     atomic.Int64
}

// New returns a counter with nothing counted.
func New() *Counter { return &Counter{} }

// Dialer returns a go-zookeeper dialer (zk.Dialer, or the argument of
// zklock.WithDialer) that opens TCP connections whose writes c counts.
func (c *Counter) Dialer() func(network, address string, timeout time.Duration) (net.Conn, error) {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		nc, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		c.conns.Add(1)
		return &conn{Conn: nc, c: c}, nil
	}
}

// The ZooKeeper opcodes of the kinds a request of another client is
// counted as (see Count).
const (
	OpCreate  int32 = 1
	OpDelete  int32 = 2
	OpGetData int32 = 4
	OpSetData int32 = 5
	OpOther   int32 = -1 // counted as other
)

// Count counts one request of opcode op written by a client that does
// not dial through Dialer (the redsync implementation's Redis commands,
// each counted as the ZooKeeper request of the same effect), so that its
// requests per acquisition fill the same columns, kind by kind.
func (c *Counter) Count(op int32) {
	if op >= 0 && int(op) < len(c.ops) {
		c.ops[op].Add(1)
		return
	}
	c.other.Add(1)
}

// Connected counts a connection such a client opened: Connections then
// tells that this process's requests were counted.
func (c *Counter) Connected() { c.conns.Add(1) }

// Connections is the number of connections dialed.
func (c *Counter) Connections() int64 { return c.conns.Load() }

// Timeout is the session timeout the server granted in its latest connect
// response; 0 before any.
func (c *Counter) Timeout() time.Duration {
	return time.Duration(c.timeoutMs.Load()) * time.Millisecond
}

// Counts returns the requests written so far, by kind.
func (c *Counter) Counts() proto.OpCounts {
	n := func(ops ...int) int64 {
		var s int64
		for _, op := range ops {
			s += c.ops[op].Load()
		}
		return s
	}
	known := []int{1, 15, 19, 21, 14, 22, 2, 20, 8, 12, 4, 3, 9, 5, 11, 101, 105}
	var other int64
	for op := range c.ops {
		if !contains(known, op) {
			other += c.ops[op].Load()
		}
	}
	return proto.OpCounts{
		Create: n(1, 15, 19, 21), Multi: n(14), Delete: n(2, 20), GetChildren: n(8, 12, 22),
		GetData: n(4), Exists: n(3), Sync: n(9), SetData: n(5), Ping: n(11), SetWatches: n(101, 105),
		Other: other + c.other.Load(),
	}
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// conn is a connection whose writes are counted.
type conn struct {
	net.Conn
	c *Counter

	// The frame being written (one writer at a time: go-zookeeper's send
	// loop, or zklock's flusher, which sends several frames per Write).
	connected bool   // the connect request was written
	hdr       []byte // the current frame's first bytes, up to its opcode
	skip      int    // the bytes of the current frame after its opcode still to come

	mu   sync.Mutex
	head []byte // the first bytes read, until the timeout is known
	read atomic.Bool
}

// Write counts each request framed in b (a 4-byte length, the xid, then
// the opcode): go-zookeeper writes one per Write, zklock's connections
// several at once; a frame may also end in a later Write.
func (cn *conn) Write(b []byte) (int, error) {
	cn.count(b)
	return cn.Conn.Write(b)
}

func (cn *conn) count(b []byte) {
	for len(b) > 0 {
		if cn.skip > 0 {
			k := min(cn.skip, len(b))
			cn.skip, b = cn.skip-k, b[k:]
			continue
		}
		k := min(12-len(cn.hdr), len(b))
		cn.hdr, b = append(cn.hdr, b[:k]...), b[k:]
		if len(cn.hdr) < 12 {
			return
		}
		cn.skip = max(0, 4+int(int32(binary.BigEndian.Uint32(cn.hdr[0:4])))-12)
		op := int32(binary.BigEndian.Uint32(cn.hdr[8:12]))
		cn.hdr = cn.hdr[:0]
		switch {
		case !cn.connected:
			cn.connected = true // the connect request: no opcode
		case op >= 0 && int(op) < len(cn.c.ops):
			cn.c.ops[op].Add(1)
		default:
			cn.c.other.Add(1)
		}
	}
}

func (cn *conn) Read(b []byte) (int, error) {
	n, err := cn.Conn.Read(b)
	if n > 0 && !cn.read.Load() {
		cn.mu.Lock()
		cn.head = append(cn.head, b[:n]...)
		if len(cn.head) >= 12 {
			cn.c.timeoutMs.Store(int64(int32(binary.BigEndian.Uint32(cn.head[8:12]))))
			cn.head = nil
			cn.read.Store(true)
		}
		cn.mu.Unlock()
	}
	return n, err
}
