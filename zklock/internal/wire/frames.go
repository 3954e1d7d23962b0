package wire

import (
	"encoding/binary"
	"fmt"
	"time"
)

// A tapped connection's reading, frame by frame (frames): the socket read
// through a buffer; the head of each frame read before go-zookeeper reads
// it, and as much more as the tap must see; a reply to the tap's own
// request taken out of the stream (call.go); a frame whose paths the
// chroot strips read whole and rewritten. On the writing side, each
// request rewritten for the chroot and noted for its answer (noteAsk). And
// the first reply held until go-zookeeper's setWatches is out
// (holdFirstReply).

// maxRewritten bounds a reply read whole to be rewritten (creates'
// replies, multis' and events are small; the server's own bound on a
// request is 1 MB): a length beyond it is garbage, and ends the
// connection rather than an allocation of it.
const maxRewritten = 64 << 20

func newFrames(r *chroot) *frames {
	return &frames{r: r, replyOp: make(map[int32]int32)}
}

// request rewrites the request frame b for the chroot (none: b as it is),
// noting by its xid what the reply to it will need, before the bytes can
// reach the server.
func (x *frames) request(b []byte) ([]byte, error) {
	if x.r == nil {
		return b, nil
	}
	if !x.wroteFirst {
		x.wroteFirst = true
		return b, nil
	}
	out, err := x.r.request(x.out, b)
	if err != nil {
		return nil, err
	}
	x.out = out
	if op := opcode(b); stripsReply(op) {
		x.mu.Lock()
		x.replyOp[int32(binary.BigEndian.Uint32(b[4:8]))] = op
		x.mu.Unlock()
	}
	return out, nil
}

// readFrames fills b from the socket's frames: a reply to one of the
// tap's own requests is taken out (call.go); a frame whose paths the
// chroot must strip (a watch event, the reply to a request noted in
// replyOp) is read whole and rewritten; any other is passed on as it
// comes, after its head.
func (c *tappedConn) readFrames(b []byte) (int, error) {
	x := c.frames
	if len(x.ready) == 0 && x.left == 0 {
		if err := c.nextFrame(); err != nil {
			return 0, err
		}
	}
	if len(x.ready) > 0 {
		n := copy(b, x.ready)
		x.ready = x.ready[n:]
		return n, nil
	}
	n, err := c.buffered(b[:min(len(b), x.left)])
	x.left -= n
	return n, err
}

// nextFrame reads the head of the next frame for go-zookeeper (its
// length and xid), and as much more as the tap must see (readReply), and
// makes it ready; a reply to the tap's own request on the way is read
// whole and handed to its caller. A read that fails keeps what was read,
// and the next one goes on from there.
func (c *tappedConn) nextFrame() error {
	x := c.frames
	for {
		if err := c.fill(4); err != nil {
			return err
		}
		size := 4 + int(binary.BigEndian.Uint32(x.frame))
		if x.readFirst { // not the connect response
			if err := c.fill(min(size, 8)); err != nil {
				return err
			}
			if isCallFrame(x.frame) {
				if err := c.fillWhole(size); err != nil {
					return err
				}
				c.tap.calls.answer(x.frame)
				x.frame = x.frame[:0]
				continue
			}
			whole, err := c.readReply(size)
			if err != nil {
				return err
			}
			if whole {
				size = len(x.frame) // rewritten: shorter
			}
		}
		x.readFirst = true
		x.ready, x.left = x.frame, size-len(x.frame)
		x.frame = x.frame[:0]
		return nil
	}
}

// readReply reads of go-zookeeper's reply frame of size bytes, whose
// length and xid are read, what the tap must see before go-zookeeper
// does: the whole frame when the chroot rewrites it or it is a watch
// event (the record of go-zookeeper's watches), the reply header when it
// answers an auth packet (the connection's order) or a request that sets
// a watch; the rest passes as it comes. The first reply may be held
// (holdFirstReply). whole: the frame was read whole.
func (c *tappedConn) readReply(size int) (whole bool, err error) {
	x := c.frames
	xid := int32(binary.BigEndian.Uint32(x.frame[4:8]))
	c.holdFirstReply(xid)
	var op int32
	rewrite := false
	if x.r != nil {
		op, rewrite = x.opOf(x.frame)
	}
	switch {
	case rewrite || xid == opNotify:
		if err := c.fillWhole(size); err != nil {
			return false, err
		}
		whole = true
		if rewrite {
			x.frame = x.r.response(x.frame, op)
		}
		if typ, path, ok := eventFields(x.frame); ok && xid == opNotify {
			c.tap.zkw.event(typ, path)
		}
	case c.order.isAuth(xid) || c.tap.zkw.asked(xid):
		if err := c.fill(min(size, 20)); err != nil {
			return false, err
		}
	}
	if xid >= 0 && len(x.frame) >= 20 { // the reply header's error code
		code := int32(binary.BigEndian.Uint32(x.frame[16:20]))
		if c.order.answeredAuth(xid, code) {
			c.tap.creds.Add(1)
		}
		c.tap.zkw.answered(xid, code)
	}
	return whole, nil
}

// fillWhole reads the whole frame of size bytes, bounded by maxRewritten.
func (c *tappedConn) fillWhole(size int) error {
	if size > maxRewritten {
		return fmt.Errorf("wire: a reply of %d bytes", size)
	}
	return c.fill(size)
}

// opOf returns the opcode whose reply frame f (its length and xid at
// least) is, and whether it carries paths.
func (x *frames) opOf(f []byte) (op int32, ok bool) {
	if len(f) < 8 {
		return 0, false
	}
	xid := int32(binary.BigEndian.Uint32(f[4:8]))
	if xid == -1 { // a watch event
		return opNotify, true
	}
	x.mu.Lock()
	op, ok = x.replyOp[xid]
	delete(x.replyOp, xid)
	x.mu.Unlock()
	return op, ok
}

// fill reads until the frame being read has n bytes.
func (c *tappedConn) fill(n int) error {
	x := c.frames
	if cap(x.frame) < n {
		x.frame = append(make([]byte, 0, max(n, 256)), x.frame...)
	}
	for len(x.frame) < n {
		k, err := c.buffered(x.frame[len(x.frame):n])
		x.frame = x.frame[:len(x.frame)+k]
		if err != nil {
			return err
		}
	}
	return nil
}

// buffered fills b from the read buffer, reading the socket when it is
// empty (straight into b when b is at least as large).
func (c *tappedConn) buffered(b []byte) (int, error) {
	if c.r == c.w {
		if !c.rdeadline.Equal(c.rapplied) {
			if err := c.Conn.SetReadDeadline(c.rdeadline); err != nil {
				return 0, err
			}
			c.rapplied = c.rdeadline
		}
		if len(b) >= len(c.rbuf) {
			return c.Conn.Read(b)
		}
		n, err := c.Conn.Read(c.rbuf[:])
		c.r, c.w = 0, n
		if n == 0 {
			return 0, err
		}
	}
	n := copy(b, c.rbuf[c.r:c.w])
	c.r += n
	return n, nil
}

// MaxReply is the largest answer to a request of the tap's that it reads:
// a larger one ends the connection.
const MaxReply = maxRewritten

// noteAsk notes, before its bytes go out, what the request framed in b
// asks that its answer will tell: an auth packet (order), a watch (the
// tap's record of go-zookeeper's).
func (c *tappedConn) noteAsk(b []byte) {
	if opcode(b) == opSetAuth {
		c.order.authOut(int32(binary.BigEndian.Uint32(b[4:8])))
		return
	}
	c.tap.zkw.wrote(b)
}

// holdFirstReply works around a data race in go-zookeeper v1.0.4 (an
// unsynchronized read of Conn.lastZxid when it re-arms watches on a new
// connection, against the receive loop's write of it for every response;
// upstream PR #35). The race detector sees the two ordered only if the
// response was read after a write that follows the re-arming, so the
// first reply on a connection that writes lastZxid (a positive xid; not
// an auth packet's, answered with zxid 0 and awaited by go-zookeeper
// before its send loop starts) is held until go-zookeeper has written its
// setWatches request, when it holds watches (zkwatches.go; when it has
// none, it reads no lastZxid and sends none, and nothing is held), or for
// at most setWatchesWait. The write closes watchesOut, this read receives
// from it: that is the happens-before edge.
func (c *tappedConn) holdFirstReply(xid int32) {
	if c.released || xid < 0 || c.order.isAuth(xid) {
		return
	}
	c.released = true
	if c.order.holdsWatches() {
		c.awaitSetWatches()
	}
}

// awaitSetWatches holds the first response after a connect (see holdFirstReply).
// The wait counts from the receive loop's first Read, not from the
// handshake: go-zookeeper starts that loop only after the session's event
// callback returned (authenticate's StateHasSession), and right before it
// reads lastZxid for setWatches, so the bound covers that step alone. Counted
// from the handshake, it also covered the callback, which waits for the
// floor's state mutex: a loaded race run spent the whole 250 ms there, and
// the detector reported go-zookeeper's race (make test run of 2026-11-28
// 14:26 UTC, TestSlowSessionCallbackKeepsTheEdge).
func (c *tappedConn) awaitSetWatches() {
	t := time.NewTimer(setWatchesWait)
	defer t.Stop()
	select {
	case <-c.watchesOut:
	case <-c.closed:
	case <-t.C:
		// No setWatches yet: most likely there are no watches to re-arm.
		// But when the session is closing, go-zookeeper drops a setWatches
		// it had queued (after reading lastZxid) instead of writing it:
		// then wait a little longer for the write or the close, since
		// responses on a closing connection matter to nobody. Bounded:
		// the close comes only once this loop reads the server's answer
		// to it (or a ping fails), so an unbounded wait held a closed
		// connection's goroutines until the next ping.
		select {
		case <-c.tap.closing:
			t.Reset(CloseGrace)
			select {
			case <-c.watchesOut:
			case <-c.closed:
			case <-t.C:
			}
		default:
		}
	}
}

// CloseGrace bounds how long a closing session waits for its requests in
// flight (zklock's Close), and a closing connection for go-zookeeper's
// setWatches (see awaitSetWatches).
const CloseGrace = time.Second
