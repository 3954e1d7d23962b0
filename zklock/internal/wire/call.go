package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The tap's own requests: Call writes a request go-zookeeper v1.0.4 cannot
// send (multiRead, multiread.go) on the session's connection, among
// go-zookeeper's, and takes its reply out of the stream before
// go-zookeeper reads it (frames.go), so that go-zookeeper never sees
// either. A request of the tap's carries an xid of its own range, below
// any go-zookeeper uses: its counter starts at 1 and would reach the range
// only after 2^31 requests; the special xids (-1 an event, -2 a ping, -4
// an auth, -8 setWatches) are far above it. ZooKeeper echoes a request's
// xid in its reply and orders nothing by it (it counts a connection's
// outstanding requests by positive xids only, so these are never
// throttled). Each answer is a touch of the session too, but the tap does
// not date proofs by it: the lease's evidence stays go-zookeeper's
// requests' (touch.go).

// ErrNotConnected is Call's error when no connection of the tap has a
// session.
var ErrNotConnected = errors.New("wire: no connection with a session")

// Request is one request of the tap's: its opcode and its fields.
type Request struct {
	Op   int32
	Body []byte
}

// Call writes the request of opcode op with fields body on the session's
// connection and waits for its answer, ctx's end (ctx.Err()) or the
// connection's (ErrCallLost). On a new connection it waits, within ctx,
// until go-zookeeper's credentials and setWatches are out (order.go);
// ErrNotConnected when no connection has a session. A request written after another's bytes
// are out (a Waiter's Sent) is answered after it, as go-zookeeper's are.
// Under a chroot its paths are rewritten as go-zookeeper's are; the
// answer's are not (no reply of an opcode the tap sends carries one).
func (t *Tap) Call(ctx context.Context, op int32, body []byte) (Reply, error) {
	r, err := t.Calls(ctx, Request{Op: op, Body: body})
	if err != nil {
		return Reply{}, err
	}
	return r[0], nil
}

// Calls writes reqs as Call does, one after the other in one write, so
// that the server runs them in that order and with nothing of the
// session's between them, and waits for all their answers. One answer
// missing fails them all.
func (t *Tap) Calls(ctx context.Context, reqs ...Request) ([]Reply, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := t.conn(ctx)
	if err != nil {
		return nil, err
	}
	var f []byte
	xids, ks := make([]int32, len(reqs)), make([]*call, len(reqs))
	for i, q := range reqs {
		xids[i] = int32(callXidBase + int64(t.calls.next.Add(1)%callXids))
		g, err := t.frame(xids[i], q)
		if err != nil {
			return nil, err
		}
		if fn := t.onWrite.Load(); fn != nil {
			if err := (*fn)(q.Op, g); err != nil { // the test seam a failed write is
				c.Close()
				return nil, fmt.Errorf("%w: %w", ErrCallLost, err)
			}
		}
		if f == nil {
			f = g // one request: its frame is the write
		} else {
			f = append(f, g...)
		}
		ks[i] = &call{c: c, done: make(chan struct{})}
	}
	t.calls.put(xids, ks)
	for _, q := range reqs {
		t.count(q.Op)
	}
	// Registered before the bytes go out, so that the answers find them; a
	// connection closed before, or while, they go fails the calls here or
	// in Close (failOn), whichever comes second.
	if err := c.queue(f); err != nil {
		t.calls.takeAll(xids)
		return nil, fmt.Errorf("%w: %w", ErrCallLost, err)
	}
	out := make([]Reply, len(reqs))
	for i, k := range ks {
		select {
		case <-k.done:
			if k.err != nil {
				t.calls.takeAll(xids[i:])
				return nil, k.err
			}
			out[i] = k.reply
		case <-ctx.Done():
			t.calls.takeAll(xids[i:]) // their answers, when they come, are dropped
			return nil, ctx.Err()
		}
	}
	return out, nil
}

// frame returns the frame of q with xid: its length, xid, opcode and
// fields, under a chroot with its paths rewritten.
func (t *Tap) frame(xid int32, q Request) ([]byte, error) {
	g := make([]byte, 12, 12+len(q.Body))
	binary.BigEndian.PutUint32(g, uint32(8+len(q.Body)))
	binary.BigEndian.PutUint32(g[4:], uint32(xid))
	binary.BigEndian.PutUint32(g[8:], uint32(q.Op))
	g = append(g, q.Body...)
	if t.chroot != nil {
		var err error
		if g, err = t.chroot.request(nil, g); err != nil {
			return nil, fmt.Errorf("wire: request of opcode %d: %w", q.Op, err)
		}
	}
	return g, nil
}

// conn returns the connection the tap's own requests go on: the one with
// a session whose order has come to them, waiting for it within ctx when
// a new connection is on its way there; ErrNotConnected when none is.
func (t *Tap) conn(ctx context.Context) (*tappedConn, error) {
	for {
		if c := t.live.Load(); c != nil {
			return c, nil
		}
		c := t.shaking.Load()
		if c == nil {
			return nil, ErrNotConnected
		}
		select {
		case <-c.order.ready:
		case <-c.closed:
			t.shaking.CompareAndSwap(c, nil)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// The tap's requests out (Call, above), by xid: each given an xid of the
// tap's own range, answered as the reader meets its reply in the stream
// (frames.go), or failed with the connection it went on (tappedConn.Close).

// ErrCallLost is Call's error when the connection ended with the request
// out: whether the server ran it is unknown (for a read, no matter).
var ErrCallLost = errors.New("wire: the connection ended before the answer")

// callXidBase is the lowest xid of the tap's range [callXidBase,
// callXidBase+callXids).
const (
	callXidBase = math.MinInt32
	callXids    = 1 << 30
)

// isCallFrame reports whether the reply frame f (its length and xid at
// least) answers a request of the tap's.
func isCallFrame(f []byte) bool {
	if len(f) < 8 {
		return false
	}
	xid := int64(int32(binary.BigEndian.Uint32(f[4:8])))
	return xid >= callXidBase && xid < callXidBase+callXids
}

// put registers the calls ks by their xids.
func (cs *calls) put(xids []int32, ks []*call) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.out == nil {
		cs.out = make(map[int32]*call)
	}
	for i, xid := range xids {
		cs.out[xid] = ks[i]
	}
}

// takeAll removes the calls of xids from those out.
func (cs *calls) takeAll(xids []int32) {
	for _, xid := range xids {
		cs.take(xid)
	}
}

// take removes the call of xid from those out and returns it (nil: none).
func (cs *calls) take(xid int32) *call {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	k := cs.out[xid]
	delete(cs.out, xid)
	return k
}

// answer hands the reply frame f (length, xid, zxid, error, fields) to its
// call, on the reading goroutine; one nobody waits for any more is
// dropped. The fields are copied: f's storage is the reader's.
func (cs *calls) answer(f []byte) {
	k := cs.take(int32(binary.BigEndian.Uint32(f[4:8])))
	if k == nil {
		return
	}
	if len(f) < 20 {
		k.err = fmt.Errorf("%w: a reply of %d bytes", ErrCallLost, len(f))
	} else {
		k.reply = Reply{ // after the length, xid and zxid
			Err:  int32(binary.BigEndian.Uint32(f[16:20])),
			Body: append([]byte(nil), f[20:]...),
		}
	}
	close(k.done)
}

// failOn fails the calls out on connection c, which is closed.
func (cs *calls) failOn(c *tappedConn) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for xid, k := range cs.out {
		if k.c == c {
			delete(cs.out, xid)
			k.err = ErrCallLost
			close(k.done)
		}
	}
}
