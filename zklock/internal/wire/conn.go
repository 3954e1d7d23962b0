package wire

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/tierlock/tierlock/internal/trace"
)

// A tapped connection's life (tappedConn): dialed through the tap
// (Tap.Dialer), read and written as go-zookeeper reads and writes it, its
// writes queued and batched for the socket (queue, flush), and closed;
// and the connection the tap's own requests go on, once its order came
// to them (taken).

// Dialer returns a go-zookeeper Dialer whose connections report writes.
func (t *Tap) Dialer() func(network, address string, timeout time.Duration) (net.Conn, error) {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		dial := t.dial
		if dial == nil {
			dial = net.DialTimeout
		}
		t.awaiting.Store(nil) // go-zookeeper is done with the last connection
		c, err := dial(network, address, timeout)
		if err == nil && t.tls != nil {
			c, err = t.secure(c, address)
		}
		if t.onDial != nil {
			t.onDial(address, err)
		}
		if err != nil {
			t.noteRefusal(address, err)
			t.dialErr.Store(&err)
			return nil, err
		}
		t.dialErr.Store(nil)
		tc := &tappedConn{Conn: c, tap: t, addr: address, watchesOut: make(chan struct{}), closed: make(chan struct{})}
		tc.rep.tap = t
		tc.wcond.L = &tc.wmu
		tc.frames = newFrames(t.chroot)
		tc.order = newOrder(func() { t.taken(tc) })
		return tc, nil
	}
}

// LastDialErr returns the error of the last dial, if it failed; when it
// connected, what became of its handshake: unanswered (*UnansweredError,
// given up or awaited still), or refused (TLS); nil once answered.
func (t *Tap) LastDialErr() error {
	if p := t.dialErr.Load(); p != nil {
		return *p
	}
	return t.Unanswered()
}

// Read passes the bytes on, noting the negotiated session timeout from the
// connect response, and from it the connection's order (order.go): the
// connect answer is read here before go-zookeeper runs the session's
// event callback, so a Call the callback leads to waits for the
// credentials and setWatches.
func (c *tappedConn) Read(b []byte) (int, error) {
	n, err := c.readFrames(b)
	c.rep.read(b[:n], time.Now())
	if !c.shook && c.rep.shook {
		c.shook = true
		t := c.tap
		if c.rep.expired {
			t.zkw.expired() // go-zookeeper's invalidateWatches
		}
		t.zkw.connected()
		t.shaking.Store(c)
		c.order.shake(int(t.creds.Load()), t.zkw.any())
	}
	if c.awaiting != nil {
		c.handshakeRead(err)
	}
	return n, err
}

// SetReadDeadline sets the deadline for reads from now on, before the
// connect answer no later than it is due (handshake.go). It reaches the
// socket when the socket is next read: a reply served from the buffer needs
// none, and most are under load.
func (c *tappedConn) SetReadDeadline(t time.Time) error {
	c.rdeadline = c.readDeadline(t)
	return nil
}

// Close closes the connection, ends a Read's wait for setWatches and
// fails later writes (what is not sent yet is dropped: go-zookeeper fails
// the requests in flight of a closed connection).
func (c *tappedConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	c.fail(net.ErrClosed)
	c.tap.live.CompareAndSwap(c, nil)
	c.tap.shaking.CompareAndSwap(c, nil)
	c.tap.calls.failOn(c)
	return c.Conn.Close()
}

// taken makes c, whose order came to the tap's requests, the connection
// they go on. A connection closed meanwhile (its order's bound can run out
// after it) is not kept: Close closes c.closed before it clears live, so
// either Close's clearing sees c stored here, or the check after the
// store sees c closed.
func (t *Tap) taken(c *tappedConn) {
	t.live.Store(c)
	t.shaking.CompareAndSwap(c, nil)
	select {
	case <-c.closed:
		t.live.CompareAndSwap(c, nil)
	default:
	}
}

// Write records the write's start (no later than the server can see its
// bytes, and before any reply to them can arrive), queues the bytes for
// the socket, then tells a pipelined request's waiter: a request written
// after this one is queued, and so sent, after it.
//
// go-zookeeper writes each request with its own Write from its send loop,
// and each Write on a socket is a system call that, on loopback, also runs
// the server side's receive. When many requests of the session are out,
// the bytes are queued instead, and a flushing goroutine, which exists only
// while there is something to send, sends them: the requests written
// while the socket is busy go out together, in one system call, and reach
// the server as one segment. With few out (batchFrom) there is nothing to
// batch with, and the hop to the flusher would cost more than it saves:
// then the send loop writes itself, as without the tap. The queue is
// bounded (maxUnsent): beyond it Write waits, as it waited for a full
// socket before.
func (c *tappedConn) Write(b []byte) (int, error) {
	out, err := c.frames.request(b) // what the server reads: b, or b under the chroot
	if err != nil {
		c.Close()
		return writeFailed(b, err)
	}
	if fn := c.tap.onWrite.Load(); fn != nil {
		if err := (*fn)(opcode(b), out); err != nil {
			c.Close()
			return writeFailed(b, err)
		}
	}
	start := time.Now()
	c.tap.began(b, start)
	w := c.tap.take(b, start)
	c.rep.wrote(b, start)
	first := !c.connectOut
	if first {
		c.wroteConnect(b, start)
	} else {
		c.noteAsk(b) // before the bytes go out: their answers find them noted
	}
	if trace.Enabled { // the start the tap dates proofs by: the replay dates them too
		trace.Wrote(c.tap, opcode(b), start, w.Key())
	}
	// Counted before the bytes go out, so that whoever has the reply sees
	// its request counted: go-zookeeper's receive loop may read the reply
	// before this Write returns.
	c.tap.count(opcode(b))
	if opcode(b) == OpSetWatches {
		// go-zookeeper read lastZxid before it framed b: the edge Read
		// waits for (see Read) needs no more, and a write that waits for
		// the socket must not hold the reader that would free it.
		c.watchesOutOnce.Do(func() { close(c.watchesOut) })
	}
	if err := c.queue(out); err != nil {
		return writeFailed(b, err) // the connection is closed (queue, send)
	}
	if !first {
		c.order.wrote(opcode(b)) // after its bytes: the tap's own queue behind them
	}
	c.tap.wrote(w)
	return len(b), nil
}

// writeFailed is what Write returns for the request framed in b, whose
// bytes could not go out: err, once the connection is closed. Except for
// an auth packet, reported as written: go-zookeeper v1.0.4 answers a
// request whose write fails twice, sendData handing it err while leaving
// it registered, and flushRequests failing it again when the connection
// ends. Its requests have room for both answers; the credentials it
// re-sends on each new connection (resendZkAuth, through sendRequest) have
// room for one, and resendZkAuth, failed, reads neither: the second answer
// then blocks go-zookeeper's loop for good, in flushRequests, and the
// session never reconnects. Reported as written, the packet is answered
// once, by flushRequests (zk.ErrConnectionClosed), and the loop goes on to
// the next connection.
func writeFailed(b []byte, err error) (int, error) {
	if opcode(b) == opSetAuth {
		return len(b), nil
	}
	return 0, err
}

// maxUnsent bounds the bytes queued for the socket.
const maxUnsent = 1 << 20

// batchFrom is how many of the session's requests must be out for a write
// to be queued for the flusher rather than written at once (a variable for
// the tests).
var batchFrom atomic.Int32

func init() { batchFrom.Store(4) }

// SetBatchFrom sets batchFrom (a test seam) and returns the function that
// restores it.
func SetBatchFrom(n int32) (restore func()) {
	old := batchFrom.Swap(n)
	return func() { batchFrom.Store(old) }
}

// SetWriteDeadline sets the deadline for the bytes written from now on:
// a batch is sent under the deadline of its first bytes, the earliest.
func (c *tappedConn) SetWriteDeadline(t time.Time) error {
	c.wmu.Lock()
	c.deadline = t
	c.wmu.Unlock()
	return nil
}

// queue appends b to what the flusher sends, starting one if none runs,
// or writes it at once when nothing is queued or being sent and few
// requests are out (see Write). Writes come from two goroutines:
// go-zookeeper's send loop and the tap's own requests (Call, the
// listings' multiRead). A write at once marks the connection flushing
// while it runs, so that the other's bytes queue behind it rather than
// go to the socket beside it (the dialer's connection need not take two
// writers: the stress command's counting one raced, loaded make test run
// 144); what queued meanwhile is then handed to a flusher.
func (c *tappedConn) queue(b []byte) error {
	c.wmu.Lock()
	for c.werr == nil && len(c.out) >= maxUnsent {
		c.wcond.Wait()
	}
	if err := c.werr; err != nil {
		c.wmu.Unlock()
		return err
	}
	if !c.flushing && len(c.out) == 0 && c.tap.out.Load() < batchFrom.Load() {
		by := c.deadline
		c.flushing = true
		c.wmu.Unlock()
		err := c.send(b, by)
		c.handOver()
		return err
	}
	defer c.wmu.Unlock()
	if len(c.out) == 0 {
		c.outBy = c.deadline
		if c.out == nil {
			c.out, c.spare = c.spare, nil
		}
	}
	c.out = append(c.out, b...)
	if !c.flushing {
		c.flushing = true
		go c.flush()
	}
	return nil
}

// handOver ends a write at once: what queued behind it goes to a
// flusher, which then ends the flushing; else it ends here.
func (c *tappedConn) handOver() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if len(c.out) > 0 && c.werr == nil {
		go c.flush()
		return
	}
	c.flushing = false
}

// flush sends what is queued, batch by batch, until nothing is; the first
// failure closes the connection (go-zookeeper's receive loop then ends and
// it reconnects, as after a failed write of its own).
func (c *tappedConn) flush() {
	c.wmu.Lock()
	for len(c.out) > 0 && c.werr == nil {
		batch, by := c.out, c.outBy
		c.out = nil
		c.wcond.Broadcast()
		c.wmu.Unlock()
		_ = c.send(batch, by)
		c.wmu.Lock()
		c.spare = batch[:0]
	}
	c.flushing = false
	c.wmu.Unlock()
}

// send writes b to the socket under the write deadline by; a failure
// closes the connection, and every later Write fails.
func (c *tappedConn) send(b []byte, by time.Time) error {
	err := c.Conn.SetWriteDeadline(by)
	if err == nil {
		_, err = c.Conn.Write(b)
	}
	if err != nil {
		c.fail(err)
		c.Close()
	}
	return err
}

// fail makes every later Write return err, and wakes those waiting.
func (c *tappedConn) fail(err error) {
	c.wmu.Lock()
	if c.werr == nil {
		c.werr = err
	}
	c.wcond.Broadcast()
	c.wmu.Unlock()
}
