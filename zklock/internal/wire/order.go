package wire

import (
	"sync"
	"sync/atomic"
	"time"
)

// The order every new connection keeps. go-zookeeper v1.0.4, once the
// connect answer is read, runs the session's event callback
// (StateHasSession), then re-sends each credential it holds, one at a
// time, each answered before the next (resendZkAuth), and only then starts
// its send loop, which writes its setWatches and whatever was queued.
// ZooKeeper keeps authentication per connection: a request written before
// the credentials' answers is judged anonymous (NoAuth under an ACL that
// keeps reads to an identity). So the tap's own requests (Call: the
// listings' multiRead, the session's setWatches) go out on a connection
// only after
//
//  1. the connect answer,
//  2. every credential go-zookeeper re-sends, written and answered (or its
//     send loop seen writing, which it starts only after them),
//  3. go-zookeeper's setWatches, when it holds watches to set again,
//
// and a Call made meanwhile waits for that moment (Tap.conn). The tap
// knows what go-zookeeper will re-send from what it saw go-zookeeper
// write and read, not from what the session meant to do: the credentials
// answered on a connection other than as a re-send (AddAuth, the caller's
// too, through Session.Conn), and the watches go-zookeeper holds
// (zkWatches, zkwatches.go).
//
// Step 3's bound: when the tap thinks go-zookeeper holds watches and no
// setWatches comes (the tap's record ahead of go-zookeeper's), the
// connection is taken setWatchesWait after step 2. Step 2 has no bound of
// its own beyond the send loop's first write (a ping, at the latest, a
// third of the session timeout after the credentials): the tap counts a
// credential as it reads its answer, go-zookeeper records it once AddAuth
// returns, and a new connection in between re-sends one fewer than the
// tap waits for.

// order is one connection's progress through the steps above.
type order struct {
	mu         sync.Mutex
	shook      bool          // step 1
	resends    int           // credentials go-zookeeper re-sends here (the tap's count at the answer)
	auths      map[int32]int // the auth packets written here and not answered, by xid: their index
	nauths     atomic.Int32  // len(auths), read without mu on every reply
	written    int           // auth packets written here
	answered   int           // re-sent credentials answered
	sendLoop   bool          // go-zookeeper wrote here what only its send loop writes
	watches    bool          // go-zookeeper holds watches: its setWatches goes first
	watchesOut bool          // go-zookeeper's setWatches was written
	timer      *time.Timer   // step 3's bound, once step 2 is done
	opened     atomic.Bool   // ready is closed (set under mu; read without it on every write)
	ready      chan struct{} // closed once the tap's own requests may go
	onReady    func()        // run once, as ready closes
}

func newOrder(onReady func()) *order {
	return &order{auths: make(map[int32]int), ready: make(chan struct{}), onReady: onReady}
}

// shake is step 1: the connect answer, for a session (expired: none, and
// go-zookeeper drops its watches); resends and watches are what the tap
// saw of go-zookeeper's credentials and watches.
func (o *order) shake(resends int, watches bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.shook, o.resends, o.watches = true, resends, watches
	o.check()
}

// authOut notes an auth packet of xid written on the connection, before
// its bytes go out.
func (o *order) authOut(xid int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.auths[xid] = o.written
	o.nauths.Store(int32(len(o.auths)))
	o.written++
}

// wrote notes go-zookeeper's request of opcode op, written on the
// connection after its connect request, once its bytes are queued: a
// request of the tap's queued after this goes out after it.
func (o *order) wrote(op int32) {
	if o.opened.Load() {
		return // nothing more to wait for: no lock on the hot path
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if op == opSetAuth && o.written <= o.resends {
		return // a re-sent credential (one writer at a time: it is the last noted)
	}
	// Anything else comes from the send loop, which starts once the
	// credentials are answered.
	o.sendLoop = true
	if op == OpSetWatches {
		o.watchesOut = true
	}
	o.check()
}

// isAuth reports whether xid is an auth packet's written on the connection
// and not yet answered.
func (o *order) isAuth(xid int32) bool {
	if o.nauths.Load() == 0 {
		return false // the common case, after the credentials: no lock
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.auths[xid]
	return ok
}

// answeredAuth notes the answer, with error code code, to the auth packet of
// xid; it reports whether the credential is one go-zookeeper now holds
// and did not before (answered without error, and not a re-send).
func (o *order) answeredAuth(xid, code int32) (added bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	i, ok := o.auths[xid]
	if !ok {
		return false
	}
	delete(o.auths, xid)
	o.nauths.Store(int32(len(o.auths)))
	if i < o.resends {
		o.answered++
		o.check()
		return false
	}
	return code == 0
}

// setWatchesWait bounds how long the first reply after a connect, and the
// tap's own requests, wait for go-zookeeper's setWatches when the tap
// thinks it holds watches (holdFirstReply, frames.go; order.go): longer than
// go-zookeeper needs to send it. A variable: the order's scene sets it
// far longer, so that a wait it should not make cannot pass unseen.
var setWatchesWait = 250 * time.Millisecond

// check opens the connection to the tap's own requests when its steps are
// done, under o.mu.
func (o *order) check() {
	if !o.shook || (o.answered < o.resends && !o.sendLoop) {
		return
	}
	if o.watches && !o.watchesOut {
		if o.timer == nil {
			o.timer = time.AfterFunc(setWatchesWait, func() {
				o.mu.Lock()
				defer o.mu.Unlock()
				o.open()
			})
		}
		return
	}
	o.open()
}

// open closes ready, once, under o.mu.
func (o *order) open() {
	if o.opened.Load() {
		return
	}
	o.opened.Store(true)
	if o.timer != nil {
		o.timer.Stop()
	}
	close(o.ready)
	o.onReady()
}

// holdsWatches reports whether go-zookeeper re-arms watches on this
// connection (see tappedConn.holdFirstReply).
func (o *order) holdsWatches() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.watches
}
