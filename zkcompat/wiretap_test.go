package zkcompat_test

import (
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zkcompat"
)

// A wire tap for the tests: the drop-in runs on the caller's connection,
// so the caller's dialer is the one place that sees every request it
// sends and every answer the server gives, whatever the code above does.
// The tap counts the requests by opcode and reads two things off the
// answers: a multi the server refused (its results are error results: one
// failing op fails the whole multi), and a delete that found its node gone
// (zk.ErrNoNode), alone or as a multi's failing op (the ops of a multi are
// read off its request).

// ZooKeeper's opcodes and the error codes the tap reads.
const (
	opCreate    = 1
	opDelete    = 2
	opSetData   = 5
	opSync      = 9
	opCheck     = 13
	opMulti     = 14
	opError     = -1 // a multi's error result
	errNoNode   = -101
	errRuntimeI = -2 // ZRUNTIMEINCONSISTENCY: an op after a multi's failing one
)

// wireTap counts what the connections it dialed carried.
type wireTap struct {
	mu      sync.Mutex
	reqs    map[int32]int64 // requests written, by opcode
	refused int64           // multis the server refused
	// refused multis by their failing op's opcode
	refusedAt map[int32]int64
	noNode    int64       // deletes that found their node gone
	syncs     []time.Time // when each sync was written
}

func newWireTap() *wireTap { return &wireTap{reqs: map[int32]int64{}, refusedAt: map[int32]int64{}} }

// tapped connects a go-zookeeper client through a new tap, as conn does.
func tapped(t testing.TB) (*zk.Conn, *wireTap) {
	t.Helper()
	w := newWireTap()
	c, events, err := zk.Connect(zktest.Servers(t), 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}),
		zk.WithDialer(w.dial))
	if err != nil {
		t.Fatal(err)
	}
	ended := zktest.DrainEvents(events)
	zktest.Eventually(t, 10*time.Second, "a session", func() bool { return c.State() == zk.StateHasSession })
	t.Cleanup(func() {
		zkcompat.CloseConn(c)
		c.Close()
		zktest.AwaitClosed(t, "the end of go-zookeeper's loop (its events channel closed)", ended)
	})
	return c, w
}

func (w *wireTap) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	nc, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	return &tapConn{Conn: nc, w: w, ops: map[int32][]int32{}}, nil
}

// tapCounts is what a tap counted.
type tapCounts struct {
	reqs, deletes, multis, refused, noNode int64
	refusedAtCreate, refusedAtDelete       int64 // refused multis whose failing op is a create, a delete
}

func (w *wireTap) counts() tapCounts {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := tapCounts{deletes: w.reqs[opDelete], multis: w.reqs[opMulti], refused: w.refused, noNode: w.noNode,
		refusedAtCreate: w.refusedAt[opCreate], refusedAtDelete: w.refusedAt[opDelete]}
	for op, n := range w.reqs {
		if op != 11 { // pings are the connection's, not the lock's
			c.reqs += n
		}
	}
	return c
}

func (c tapCounts) minus(d tapCounts) tapCounts {
	return tapCounts{c.reqs - d.reqs, c.deletes - d.deletes, c.multis - d.multis, c.refused - d.refused, c.noNode - d.noNode,
		c.refusedAtCreate - d.refusedAtCreate, c.refusedAtDelete - d.refusedAtDelete}
}

// tapConn is a tapped connection. go-zookeeper writes from one goroutine
// and reads from another; the frames of each direction are put together
// from the bytes as they come.
type tapConn struct {
	net.Conn
	w *wireTap

	out, in         []byte // a frame's bytes so far, each direction
	wrote, readConn bool   // the connect request written, its answer read

	mu  sync.Mutex
	ops map[int32][]int32 // xid -> the opcodes of a delete or a multi out (a multi's ops)
}

func (c *tapConn) Write(b []byte) (int, error) {
	c.out = frames(append(c.out, b...), func(f []byte) {
		if !c.wrote { // the connect request has no xid
			c.wrote = true
			return
		}
		xid, op := int32(binary.BigEndian.Uint32(f[0:4])), int32(binary.BigEndian.Uint32(f[4:8]))
		c.w.mu.Lock()
		c.w.reqs[op]++
		if op == opSync {
			c.w.syncs = append(c.w.syncs, time.Now())
		}
		c.w.mu.Unlock()
		ops := []int32{op}
		if op == opMulti {
			ops = multiOps(f[8:])
		}
		if op == opDelete || op == opMulti {
			c.mu.Lock()
			c.ops[xid] = ops
			c.mu.Unlock()
		}
	})
	return c.Conn.Write(b)
}

func (c *tapConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.in = frames(append(c.in, b[:n]...), func(f []byte) {
		if !c.readConn {
			c.readConn = true
			return
		}
		c.answer(f)
	})
	return n, err
}

// answer reads a reply: xid, zxid, error, then the body.
func (c *tapConn) answer(f []byte) {
	if len(f) < 16 {
		return
	}
	xid, code := int32(binary.BigEndian.Uint32(f[0:4])), int32(binary.BigEndian.Uint32(f[12:16]))
	c.mu.Lock()
	ops, ok := c.ops[xid]
	delete(c.ops, xid)
	c.mu.Unlock()
	if !ok {
		return
	}
	refused, at, failed := false, 0, code
	if len(ops) != 1 || ops[0] != opDelete {
		refused, at, failed = multiFailure(f[16:])
		refused = refused || code != 0
	}
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	if refused {
		c.w.refused++
		if at < len(ops) {
			c.w.refusedAt[ops[at]]++
		}
	}
	if failed == errNoNode && at < len(ops) && ops[at] == opDelete {
		c.w.noNode++
	}
}

// multiFailure reads a multi's results: whether they are error results
// (the server refused the multi), and the failing op's place and error.
func multiFailure(b []byte) (refused bool, at int, failed int32) {
	for i := 0; len(b) >= 9; i++ {
		typ, done := int32(binary.BigEndian.Uint32(b[0:4])), b[4] != 0
		if done || typ != opError || len(b) < 13 {
			break
		}
		refused = true
		if e := int32(binary.BigEndian.Uint32(b[9:13])); e != 0 && e != errRuntimeI && failed == 0 {
			at, failed = i, e
		}
		b = b[13:]
	}
	return refused, at, failed
}

// multiOps reads the opcodes of a multi request's ops: each a header
// (type, done, error), then the op (create: path, data, ACLs, flags;
// delete and check: path, version; setData: path, data, version).
func multiOps(b []byte) []int32 {
	var ops []int32
	r := reader{b: b}
	for {
		typ, done := r.int32(), r.byte()
		r.int32()
		if done != 0 || r.bad {
			return ops
		}
		ops = append(ops, typ)
		r.bytes() // the path
		switch typ {
		case opCreate:
			r.bytes()
			for range r.int32() { // ACLs: perms, scheme, id
				r.int32()
				r.bytes()
				r.bytes()
			}
			r.int32()
		case opSetData:
			r.bytes()
			r.int32()
		case opDelete, opCheck:
			r.int32()
		default:
			return ops // not one go-zookeeper sends in a multi
		}
	}
}

// reader reads jute's big-endian encoding; bad once past the end.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) next(n int) []byte {
	if n < 0 || len(r.b) < n {
		r.bad, r.b = true, nil
		return make([]byte, max(n, 0))
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) byte() byte   { return r.next(1)[0] }
func (r *reader) int32() int32 { return int32(binary.BigEndian.Uint32(r.next(4))) }

// bytes skips a buffer or a string: its length (-1: none), then its bytes.
func (r *reader) bytes() {
	if n := r.int32(); n > 0 {
		r.next(int(n))
	}
}

// frames calls fn with each whole frame at the head of buf (without its
// length) and returns what is left of buf.
func frames(buf []byte, fn func([]byte)) []byte {
	for len(buf) >= 4 {
		n := int(binary.BigEndian.Uint32(buf[0:4]))
		if len(buf) < 4+n {
			break
		}
		fn(buf[4 : 4+n])
		buf = buf[4+n:]
	}
	return append([]byte(nil), buf...)
}
