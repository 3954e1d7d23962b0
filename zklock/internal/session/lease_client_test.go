package session

import (
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/wire"
	"github.com/tierlock/tierlock/zklock/internal/writes"
)

// The double's client: go-zookeeper v1.0.4's connection as conn.go has it.
//
//   - Requests are written in the order handed (its send loop), each when
//     the driver picks (at once, or a little later); a stalled socket
//     holds the write under way, and every write behind it, until the
//     stall ends, and a write held for the read timeout (2T/3, its write
//     deadline) fails with the socket's error and drops the connection.
//   - A ping is written every T/3 of a connection (a ticker, whatever else
//     is written; a tick that finds the send loop held waits for it), T the
//     timeout the connection was granted: go-zookeeper's timings follow
//     each connect answer.
//   - Writes reach the follower in order, after a delay the driver picks;
//     under a blackhole of the client's traffic they arrive once it ends
//     (TCP resends them), or never if the connection drops first.
//   - Nothing received for 2T/3 drops the connection (its read deadline).
//     A drop fails the requests written and unanswered with
//     zk.ErrConnectionClosed; those not written go out on the next
//     connection, in whatever session it has.
//   - A connection is made, and its credential sent again, as
//     lease_connect_test.go has it.
type client struct {
	cur     *cconn        // nil while down; made, maybe not answered yet (shook)
	n       int           // connections made
	sendq   []*req        // handed, not yet written
	timeout time.Duration // the timeout the next connect asks: the last granted (go-zookeeper's sessionTimeoutMs)
	creds   bool          // an AddAuth succeeded: each new connection sends it again

	downTill             time.Duration // no connection before then (a drop's)
	slowNext             time.Duration // the next connection reaches the second member, its answer this late (an rv step's; 0: none)
	nearNext             time.Duration // the next connection's answer this late, the stream down cut after it until about the expiry (an nd step's; 0: none)
	stallFrom, stallTill time.Duration // the socket takes nothing then
	bhFrom, bhTill       time.Duration // the client's traffic is lost then
}

// cconn is one connection.
type cconn struct {
	n        int
	sid      int64          // the session the follower took it in (0 until then, or none)
	asked    int64          // the session its connect request names (0: a new one)
	T        time.Duration  // the session timeout its member grants
	shook    bool           // the client read a connect answer with a session: it may write
	authing  bool           // go-zookeeper sends its credential again: its send loop waits for the reply
	rec      *wire.Recorder // what the tap notes of it (nil under Wrap: no tap)
	first    int            // its first write, the connect request, in world.writes
	acked    int            // its latest write a reply confirmed (confirm)
	lastRecv time.Duration
	busy     time.Duration // the send loop is held in a write until then
	writing  bool          // the next write is scheduled
	tick     bool          // a ping tick waits for the send loop
	arrive   time.Duration // when its latest write reaches the follower
	back     time.Duration // when its latest reply reaches the client
	replies  []*reply      // the follower's, in order
	out      []*req        // written, unanswered
	slow     time.Duration // its connect answer reaches the client this long after the leader's touch at least (an rv step's; 0: as drawn)
	near     time.Duration // the same, an nd step's, the stream down cut behind the answer (nearDeadline; 0: none)
}

// event tells the floor a state, as go-zookeeper's event callback does
// (after storing it: observe reads SessionID), and lets the floor's
// goroutines it woke settle before the next, so that which state each of
// them saw does not depend on the Go scheduler.
//
// Under Wrap the floor polls the state, and reads the events from a
// channel, which it drains at once, or there is no channel at all (then
// it sees only what its polls find: see).
func (w *world) event(st zk.State) {
	w.state.Store(int32(st))
	ev := zk.Event{Type: zk.EventSession, State: st}
	switch {
	case !w.cfg.wrap:
		w.s.st.onEvent(ev)
	case w.events != nil:
		select {
		case w.events <- ev: // the floor drains it at once while open
		default: // closed, it drains nothing: go-zookeeper drops the event
		}
	}
	w.settle()
}

// drop ends the connection on the client's side (why, for the trace):
// failed, if not nil, is the request whose write failed with ferr.
func (w *world) drop(why string, failed *req, ferr error) {
	c := w.c.cur
	if c == nil {
		return
	}
	w.logf("drop: %s", why)
	w.c.cur = nil
	if c.shook {
		w.hist.ups[len(w.hist.ups)-1].to = w.now()
		w.hist.drops = append(w.hist.drops, w.now())
	}
	// Before its answer too: go-zookeeper's loop tells the TCP state.
	w.event(zk.StateDisconnected)
	out := c.out
	c.out = nil
	if !w.isClosed() {
		w.ag.at(w.now()+w.reconnectDelay(), w.connect)
	}
	// Then, once the floor took the state in (its goroutines woken by the
	// change run first), the requests out fail, as go-zookeeper's loop
	// flushes them after setting the state.
	w.ag.at(w.now(), func() {
		for _, r := range out {
			if r == failed {
				w.end(r, nil, ferr)
			} else {
				w.end(r, nil, zk.ErrConnectionClosed)
			}
			w.settle()
		}
	})
}

// recv notes that c received something now, and arms its read deadline.
func (w *world) recv(c *cconn) {
	c.lastRecv = w.now()
	at := c.lastRecv
	w.ag.at(at+c.T*2/3, func() {
		if c == w.c.cur && c.lastRecv == at {
			w.cover(coverReadDeadline, true)
			w.drop("read deadline: nothing received for 2T/3", nil, nil)
		}
	})
}

// tick is c's ping ticker.
func (w *world) tick(c *cconn) {
	if c != w.c.cur {
		return
	}
	w.ag.at(w.now()+c.T/3, func() { w.tick(c) })
	if c.busy > w.now() || c.writing {
		c.tick = true
		w.pump()
		return
	}
	w.begin(c, 'p', nil)
}

// pump schedules c's next write, when one waits and none is scheduled
// (and its send loop runs: its answer read, its credential's answered).
func (w *world) pump() {
	c := w.c.cur
	if c == nil || !c.shook || c.authing || c.writing || len(w.c.sendq) == 0 && !c.tick {
		return
	}
	at := max(w.now(), c.busy)
	if len(w.c.sendq) > 0 {
		at += w.jitter()
	}
	c.writing = true
	w.ag.at(at, func() { w.writeNext(c) })
}

// writeNext writes c's next request, or the ping whose tick waited.
func (w *world) writeNext(c *cconn) {
	c.writing = false
	if c != w.c.cur {
		return
	}
	if c.busy > w.now() {
		w.pump()
		return
	}
	if c.tick && (len(w.c.sendq) == 0 || w.rng.IntN(2) == 0) {
		c.tick = false
		w.begin(c, 'p', nil)
	} else {
		r := w.c.sendq[0]
		w.c.sendq = w.c.sendq[1:]
		r.conn = c
		c.out = append(c.out, r)
		w.begin(c, 'r', r)
	}
	w.pump()
}

// begin begins a write on c now: it reaches the follower later. A
// connect request's write has no deadline that a stall reaches (ten read
// timeouts).
func (w *world) begin(c *cconn, what byte, r *req) {
	i := w.record(c, what, r)
	if r != nil {
		r.wi = i
		w.logf("write %d", r.n)
	}
	now := w.now()
	if now >= w.c.stallFrom && now < w.c.stallTill {
		c.busy = w.c.stallTill
		w.cover(coverStalled, r != nil)
		if c.busy-now > c.T*2/3 && what != 'c' {
			w.ag.at(now+c.T*2/3, func() { w.writeTimeout(c, r) })
		}
	}
	at := max(now, c.busy) + w.hop()
	if at >= w.c.bhFrom && at < w.c.bhTill {
		at = w.c.bhTill + w.hop()
		w.cover(coverBlackholed, true)
	}
	at = max(at, c.arrive)
	c.arrive = at
	w.ag.at(at, func() { w.arrive(c, what, r, i) })
}

// writeTimeout fails the write held past its deadline: its request gets
// the socket's error, the connection drops.
func (w *world) writeTimeout(c *cconn, r *req) {
	if c != w.c.cur {
		return
	}
	err := &net.OpError{Op: "write", Net: "tcp", Err: os.ErrDeadlineExceeded}
	w.drop("write held past its deadline", r, err)
}

// arrive is a write of c reaching the follower: a connect request goes
// to the leader, an auth is answered at once (lease_connect_test.go);
// anything else touches the session, and takes its place among c's
// replies.
func (w *world) arrive(c *cconn, what byte, r *req, wi int) {
	switch {
	case c != w.c.cur:
		return // lost with its connection
	case what == 'c':
		w.revalidate(c)
		return
	case r != nil && r.op == opAuth:
		w.answerAuth(c, r, wi)
		return
	}
	w.touched(c.sid, c.T)
	slot := &reply{r: r, ready: what != 'r', wi: wi}
	c.replies = append(c.replies, slot)
	if what == 'r' {
		w.forward(c, r, slot)
	}
	w.flush(c)
}

// reply is a place among a connection's replies, in the order their
// requests reached the follower.
type reply struct {
	r     *req // nil: a ping's
	wi    int  // the packet's write, in world.writes
	ready bool
	auth  bool // an auth's: it confirms no touch
	res   []zk.MultiResponse
	err   error
}

// flush sends c's ready replies, in order, to the client: each arrives
// after a delay, never before the one sent ahead of it.
func (w *world) flush(c *cconn) {
	for len(c.replies) > 0 && c.replies[0].ready {
		slot := c.replies[0]
		c.replies = c.replies[1:]
		c.back = max(w.now()+w.back(), c.back)
		w.ag.at(c.back, func() { w.received(c, slot) })
	}
}

// received is a reply reaching the client.
func (w *world) received(c *cconn, slot *reply) {
	if c != w.c.cur {
		w.cover(coverAnswerLost, slot.r != nil && !slot.auth && slot.err == nil)
		return // failed when its connection dropped
	}
	w.recv(c)
	if !slot.auth {
		w.confirm(c, slot.wi)
	}
	if c.rec != nil {
		xid := int32(-2)
		if slot.r != nil {
			xid = slot.r.xid()
		}
		c.rec.Read(replyFrame(xid))
	}
	if r := slot.r; r != nil {
		c.out = slices.DeleteFunc(c.out, func(x *req) bool { return x == r })
		w.logf("answer %d: %v", r.n, slot.err)
		w.end(r, slot.res, slot.err)
		if slot.auth {
			w.authed(c, r)
		}
	}
}

// enqueue takes the requests the floor handed: go-zookeeper's queue.
func (w *world) enqueue() bool {
	in := w.takeInbox()
	for _, r := range in {
		w.logf("handed %d: op %d %s (session %#x)", r.n, r.op, opPaths(r), r.sid)
	}
	w.c.sendq = append(w.c.sendq, in...)
	w.pump()
	return len(in) > 0
}

// opPaths names r's paths, a multi's sorted: the floor ends holds in its
// map's order, and their nodes' deletes come in that order.
func opPaths(r *req) string {
	if r.op != wire.OpMulti {
		return r.path
	}
	var ps []string
	for _, op := range r.ops {
		ps = append(ps, writes.OpPath(op))
	}
	slices.Sort(ps)
	return strings.Join(ps, " ")
}

// isClosed reports whether the connection's Close was called.
func (w *world) isClosed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}
