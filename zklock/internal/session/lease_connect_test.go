package session

import (
	"time"

	"github.com/go-zookeeper/zk"
)

// The double's connections as they are made (go-zookeeper v1.0.4's
// conn.go: connect, authenticate, resendZkAuth; ZooKeeper 3.8's
// follower: processConnectRequest, Learner.validateSession; the leader's
// LearnerHandler), and their auths.
//
//   - A connection tells the floor StateConnecting and StateConnected,
//     and writes its connect request at once, naming the session the
//     client has (0: none) and asking the timeout the last connect answer
//     granted (the floor's at first). The request reaches the follower
//     after a hop; the follower sends the leader a REVALIDATE of the
//     session, or a new session's creation, on the stream up behind what
//     went before; the leader touches the session with the timeout the
//     member grants the connection (a REVALIDATE of a session it expired
//     gets none); its answer comes down the stream down, and the
//     follower's connect answer reaches the client after the way back
//     (late answers' share: up to T). So the answer is read later than the
//     leader's touch by the whole way down, which may be slow.
//   - Each connection reaches a member of the ensemble, which grants the
//     timeout asked within its own bounds (leaseConfig.members): the
//     client's timings (pings, deadlines) follow the connection's, and so
//     do the leader's expiries of its touches.
//   - Nothing else is written before the answer: a drop before it (a
//     fault) ends the attempt, told StateDisconnected, and the client
//     tries again; so does, under Dial, an answer not read 2T/3 after the
//     request's write, T the timeout asked (the tapped connection's read
//     deadline; under Wrap go-zookeeper waits ten times that, longer than
//     any answer here takes). An answer with no session tells
//     StateExpired and StateDisconnected, and a connection for a new
//     session follows at once. An answer with one tells StateHasSession.
//   - The floor's AddAuth is a request with an ordinary xid from the
//     client's counter and opcode 100; once one succeeded, go-zookeeper
//     sends the credential again on each new connection right after its
//     answer (resendZkAuth), from the same counter, and starts its send
//     loop (pings, requests) only once that auth is answered. The follower
//     answers an auth itself (processPacket, no submitRequest): at once,
//     ahead of the replies still waiting for the leader, and without
//     touching the session.
//   - The first connection, at the schedule's start, is answered at once:
//     the schedule begins when Dial's first session is made (Dial waits
//     for it), so the floor never sees a connection lost before its
//     first session.

// opAuth is go-zookeeper's opSetAuth.
const opAuth int32 = 100

// connect makes a connection, in the session the client has (0: a new
// one), unless one is being made or is up.
func (w *world) connect() {
	if w.isClosed() || w.c.cur != nil {
		return
	}
	switch {
	case w.now() < w.c.downTill:
		w.ag.at(w.c.downTill, w.connect)
		return
	case w.linkCut() || w.srv.orphan:
		// No revalidation while cut from the leader.
		w.ag.at(max(w.srv.down.cutTill, w.srv.up.cutTill, w.now()+w.cfg.tick/2), w.connect)
		return
	}
	w.event(zk.StateConnecting)
	w.event(zk.StateConnected)
	w.hist.dials = append(w.hist.dials, w.now())
	w.c.n++
	c := &cconn{n: w.c.n, asked: w.sid.Load(), acked: -1, T: w.member(w.c.n).grant(w.c.timeout)}
	if c.slow = w.c.slowNext; c.slow > 0 {
		w.c.slowNext = 0
		c.T = w.cfg.members[len(w.cfg.members)-1].grant(w.c.timeout)
	}
	c.near, w.c.nearNext = w.c.nearNext, 0
	if !w.cfg.wrap {
		c.rec = w.tap.NewRecorder()
	}
	w.c.cur = c
	if c.n == 1 {
		c.first = w.record(c, 'c', nil)
		c.sid = w.admit(c)
		w.shake(c)
		return
	}
	w.begin(c, 'c', nil)
	c.first = len(w.writes) - 1
	if !w.cfg.wrap {
		w.ag.at(w.now()+w.c.timeout*2/3, func() {
			if c == w.c.cur && !c.shook {
				w.drop("the handshake unanswered for 2T/3", nil, nil)
			}
		})
	}
}

// revalidate is c's connect request at the follower: to the leader and
// back (admit), then to the client.
func (w *world) revalidate(c *cconn) {
	w.sendUp(func() {
		id := w.admit(c)
		w.sendDown(func() {
			if c != w.c.cur {
				return // the client gave the attempt up
			}
			c.sid = id
			c.back = max(w.now()+w.back(), c.back)
			if c.slow > 0 {
				c.back = max(w.now()+c.slow, c.back) // an rv step's: the way down slow
			}
			if c.near > 0 {
				c.back = max(w.now()+c.near, c.back) // an nd step's
				w.nearDeadline(id)
			}
			w.ag.at(c.back, func() { w.shake(c) })
		})
	})
}

// shake is c's connect answer read by the client, as go-zookeeper's
// authenticate reads it: the tap reads it, the state follows.
func (w *world) shake(c *cconn) {
	if c != w.c.cur {
		return
	}
	id := c.sid
	var ms int32
	if id != 0 {
		ms = int32(c.T / time.Millisecond)
		w.confirm(c, c.first)
	}
	if c.rec != nil {
		c.rec.Read(connectAnswer(ms, id))
	}
	if id == 0 {
		w.expiredAt(c)
		return
	}
	c.shook = true
	w.c.timeout = c.T
	w.granted.Store(int64(c.T)) // before the state: the floor reads it then
	old := w.sid.Load()
	w.cover(coverNewSession, id != old && c.n > 1)
	w.cover(coverSameSession, id == old)
	w.sid.Store(id)
	w.hist.ups = append(w.hist.ups, span{from: w.now(), to: -1, sid: id})
	w.hist.grants = append(w.hist.grants, grantRec{at: w.now(), sid: id, T: c.T})
	w.logf("connected %d in session %#x, granted %v", c.n, id, c.T)
	w.recv(c)
	w.event(zk.StateHasSession)
	if w.c.creds {
		w.resendAuth(c)
		return
	}
	w.sending(c)
}

// expiredAt is a connect answer with no session: the client learns that
// its session expired, and connects again for a new one.
func (w *world) expiredAt(c *cconn) {
	id := w.sid.Load()
	w.logf("connect %d: session %#x expired", c.n, id)
	w.c.cur = nil
	w.sid.Store(0)
	w.hist.learnt = append(w.hist.learnt, learnt{at: w.now(), id: id})
	w.event(zk.StateExpired)
	w.event(zk.StateDisconnected)
	w.connect()
}

// sending starts c's send loop: its ping ticker, and what was queued.
func (w *world) sending(c *cconn) {
	w.ag.at(w.now()+c.T/3, func() { w.tick(c) })
	w.pump()
}

// resendAuth is go-zookeeper's resendZkAuth on c: the credential goes
// out before the send loop starts, which waits for its answer.
func (w *world) resendAuth(c *cconn) {
	c.authing = true
	r := w.internal(opAuth)
	r.conn = c
	c.out = append(c.out, r)
	w.begin(c, 'r', r)
}

// answerAuth is the follower answering c's auth r: at once, behind what
// it sent before and ahead of what waits for the leader, with no touch.
func (w *world) answerAuth(c *cconn, r *req, wi int) {
	slot := &reply{r: r, wi: wi, ready: true, auth: true}
	c.back = max(w.now()+w.back(), c.back)
	w.ag.at(c.back, func() { w.received(c, slot) })
}

// authed is c's auth r answered: the floor's AddAuth is stored, to be
// sent on each new connection; a credential sent again lets the send loop
// start.
func (w *world) authed(c *cconn, r *req) {
	if !r.internal {
		w.c.creds = true
		return
	}
	c.authing = false
	w.sending(c)
}

// internal is a request of go-zookeeper's own (a credential sent again),
// numbered from the same counter as the floor's.
func (w *world) internal(op int32) *req {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	r := &req{op: op, done: make(chan struct{}), answered: -1, wi: -1, internal: true,
		sid: w.sid.Load(), handed: w.now(), handSeq: w.seq, n: len(w.reqs)}
	r.mark = len(w.writes)
	w.reqs = append(w.reqs, r)
	return r
}

// nearStep is an nd step (slow, its connect answer's delay): an
// acquisition, and a drop whose next connection is made when the leader's
// expiry of its REVALIDATE's touch will fall just short of one of its
// tick boundaries (a touch T before it, T the timeout the connection
// asks, after the hops it takes at the least), so that the expiry queue's
// rounding adds little and the expiry comes within the T/8 that the
// reach of WithLossOnExpiryOnly outlives it by; its answer slow, the
// stream down cut behind it (nearDeadline).
func (w *world) nearStep(slow time.Duration) {
	w.c.nearNext = max(slow, time.Nanosecond)
	w.startAcquire()
	w.drop("dropped by the explorer, the next answer slow and the stream down cut until the expiry", nil, nil)
	T := w.c.timeout
	ahead := T + T/128 + uniform(w.rng, T/64) // the touch's expiry, short of the boundary by what the hops add
	at := w.roundUp(w.now()+ahead) - ahead
	w.c.downTill = max(w.c.downTill, at)
	w.ag.at(at, w.connect)
}

// nearDeadline is an nd step's cut, once the follower took the answer of
// the connection that revalidated session id (0: none, it expired): the
// stream down is cut until the leader's expiry of the session, as its
// connect left it, and up to T/32 more. The leader hears nothing of the
// session meanwhile (its pings wait), the requests the client writes once
// the slow answer is read are forwarded and applied, and their answers
// wait: an acquisition's create answered just after the expiry, its grant
// asked then, near the lease's deadline (a hold granted on the whole 9T/8
// reach under WithLossOnExpiryOnly is granted after the expiry: (a)).
func (w *world) nearDeadline(id int64) {
	ls := w.srv.sess[id]
	if id == 0 || ls == nil || ls.expiredAt >= 0 {
		return
	}
	if d := ls.expires + uniform(w.rng, w.cfg.T/32) - w.now(); d > 0 {
		w.partition(d, true, false)
	}
}
