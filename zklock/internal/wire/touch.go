package wire

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierlock/tierlock/internal/mono"
	"github.com/tierlock/tierlock/internal/mutant"
	"github.com/tierlock/tierlock/internal/trace"
)

// What the lease (package session, lease.go) needs to know of when the
// servers heard the session: every packet a client writes touches its
// session at the server it reaches, before that server answers it or any
// packet after it on the connection (ZooKeeperServer.submitRequest touches
// first, in the order the connection's packets arrive). So a reply read at
// time a, on a connection, to a packet written there at w (or to any
// packet written after it) shows that the server touched the session
// between w and a. And the connect request's reply shows more: the leader
// itself touched the session then (a new session's creation, or the
// REVALIDATE a follower sends the leader for a session it did not have).
//
// The tap keeps both: Touches, in the order the replies came, and the
// latest Handshake. Whether a reply confirms a touch is told by the packet
// it answers (pending); the replies are read below as go-zookeeper reads
// them, each noting here what it confirms.

// Touches records, in the order their replies came, touches known to have
// happened: a packet written at written was touched by the server no
// later than answered. Each entry was written later than the one before
// it, by at least its grain; the oldest drop off past touchRing. The zero
// value is empty and ready to use, with no grain (the floor's own proofs
// under Wrap: a few a second); the tap's has touchGrain.
type Touches struct {
	grain int64
	last  atomic.Int64 // the latest entry's written: Confirm's path without the lock
	mu    sync.Mutex
	n     int64
	ring  [touchRing]touch
}

type touch struct{ written, answered int64 } // mono.Time: the lease reads one monotonic clock

// A busy session confirms thousands of packets a second, and a chain looks
// back π and two periods (about T/2, lease.go). So in the tap's record a
// touch written less than touchGrain after the latest entry adds nothing: a chain's touch is
// then dated at most touchGrain early, which only shortens the lease, and
// the ring spans at least touchRing × touchGrain (82 s) of writes. (With
// every reply kept and 4,096 of them, a session answering 4,000 a second
// kept one second: its chains found no touch old enough, and its grants
// waited for the lease from 8 s on, when the connect answer's ran out.)
const (
	touchRing  = 8192
	touchGrain = int64(10 * time.Millisecond)
)

// Confirm notes that a packet written at written was touched by answered.
// A packet written less than the grain after the latest one noted (with no
// grain: no later) adds nothing.
func (t *Touches) Confirm(written, answered time.Time) {
	w, a := int64(mono.Of(written)), int64(mono.Of(answered))
	if w < t.last.Load()+max(t.grain, 1) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n > 0 {
		last := t.ring[(t.n-1)%touchRing]
		if w < last.written+max(t.grain, 1) {
			return
		}
		a = max(a, last.answered) // in answer order, whatever the clock read
	}
	t.ring[t.n%touchRing] = touch{written: w, answered: a}
	t.n++
	t.last.Store(w)
}

// Before returns the write time of the latest packet known, by at, to
// have been touched: the latest entry answered no later than at. ok is
// false when none was, or when the entries that could say have dropped
// off.
func (t *Touches) Before(at time.Time) (written time.Time, ok bool) {
	x := int64(mono.Of(at))
	t.mu.Lock()
	defer t.mu.Unlock()
	lo := max(t.n-touchRing, 0)
	if t.n == 0 || t.ring[lo%touchRing].answered > x {
		return time.Time{}, false
	}
	// The last entry answered by x, in [lo, n): answers never decrease.
	hi := t.n - 1
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if t.ring[mid%touchRing].answered <= x {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return mono.Time(t.ring[lo%touchRing].written).Std(), true
}

// SeenAfter returns when the first packet written after w known to be
// touched was seen touched: the earliest entry written after w. ok is
// false when none was (or w is older than the ring, whose oldest entry is
// then taken).
func (t *Touches) SeenAfter(w time.Time) (answered time.Time, ok bool) {
	x := int64(mono.Of(w))
	t.mu.Lock()
	defer t.mu.Unlock()
	lo, hi := max(t.n-touchRing, 0), t.n
	// The first entry written after x, in [lo, n]: writes increase.
	for lo < hi {
		mid := lo + (hi-lo)/2
		if t.ring[mid%touchRing].written > x {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo == t.n {
		return time.Time{}, false
	}
	return mono.Time(t.ring[lo%touchRing].answered).Std(), true
}

// Handshake is a connection's connect request and the server's answer:
// the leader touched session SessionID after the request was written
// (Written) and before the answer was read, granting Timeout. Least and
// Most are the least and the most timeout any connect answer on the tap
// granted the session: every member that granted one may still touch the
// session with it (a follower's report of a touch carries the timeout its
// connection was granted), so the lease reaches by the least, and takes
// the tick from the most (lease.go).
type Handshake struct {
	Written     time.Time
	SessionID   int64
	Timeout     time.Duration
	Least, Most time.Duration
}

// next is the record after a connect answer granting session sid the
// timeout d to a request written at written.
func (h Handshake) next(written time.Time, sid int64, d time.Duration) Handshake {
	least, most := d, d
	if h.SessionID == sid && h.Timeout > 0 {
		least, most = min(h.Least, d), max(h.Most, d)
	}
	return Handshake{Written: written, SessionID: sid, Timeout: d, Least: least, Most: most}
}

// pending is a packet written: its xid (-2 a ping, -8 the watches
// re-armed, else go-zookeeper's counter), its opcode, and when.
type pending struct {
	xid, op int32
	at      time.Time
}

// What a reply confirms, by the opcode of the packet it answers. ZooKeeper
// 3.8 (ZooKeeperServer.processPacket) answers an auth packet itself, without
// submitRequest and so without touching the session, and possibly ahead of
// the packets written before it; every other packet go-zookeeper v1.0.4
// writes (its requests, pings, SetWatches on a new connection, the close)
// goes through submitRequest, whose submitRequestNow touches the session
// before anything else, in the connection's order. go-zookeeper sends an
// auth (AddAuth, and resendZkAuth on each new connection) with an ordinary
// xid from its counter, not the Java client's -4, so a reply is told apart
// by the opcode its packet was written with, never by its xid.
const (
	opAuth  int32 = 100 // AddAuth: answered untouched
	xidAuth int32 = -4  // the Java client's auth xid: answered untouched too
)

// untouched reports whether the server answers p without touching the
// session: its reply confirms no touch, neither p's nor the packets before.
func (p pending) untouched() bool {
	if mutant.On(mutant.AuthTouches) {
		return p.xid == xidAuth // seeded bug: an auth told by the Java client's xid alone
	}
	return p.op == opAuth || p.xid == xidAuth
}

// A connection's replies, read as go-zookeeper reads them (replies): the
// connect answer, which gives the session's Handshake and the timeout
// granted, then each reply's head, which confirms the touch of the packets
// it answers (Touches, above). The tap's record of both (LastHandshake,
// Touches), and the Recorder, which notes a connection's packets without a
// socket.

// LastHandshake returns the latest connect answer that gave the client a
// session (Timeout > 0), and false before the first.
func (t *Tap) LastHandshake() (Handshake, bool) {
	t.hsMu.Lock()
	defer t.hsMu.Unlock()
	return t.hs, t.hs.Timeout > 0
}

// Touches is the tap's record of the session's touches (see Touches).
func (t *Tap) Touches() *Touches { return &t.touched }

// wrote notes the packet framed in b (length, xid, opcode...) written at
// start; the first of a connection is its connect request.
func (r *replies) wrote(b []byte, start time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.first {
		r.first, r.connect = true, start
		return
	}
	if len(b) < 8 {
		return
	}
	r.out = append(r.out, pending{xid: int32(binary.BigEndian.Uint32(b[4:8])), op: opcode(b), at: start})
}

// read takes bytes b, read now from the connection, as go-zookeeper reads
// them: first the connect answer, then reply frames.
func (r *replies) read(b []byte, now time.Time) {
	for len(b) > 0 {
		if !r.shook {
			b = r.readConnect(b, now)
			continue
		}
		if r.left > 0 {
			k := min(r.left, len(b))
			r.left -= k
			b = b[k:]
			continue
		}
		k := min(8-r.nhead, len(b))
		copy(r.head[r.nhead:], b[:k])
		r.nhead += k
		b = b[k:]
		if r.nhead == 8 {
			r.left = 4 + int(binary.BigEndian.Uint32(r.head[0:4])) - 8
			r.nhead = 0
			r.answered(int32(binary.BigEndian.Uint32(r.head[4:8])), now)
		}
	}
}

// readConnect takes the connect answer's bytes (length, protocol
// version, timeout ms, session id, password) and returns the rest of b.
func (r *replies) readConnect(b []byte, now time.Time) []byte {
	if r.nhead < len(r.head) {
		k := copy(r.head[r.nhead:], b)
		r.nhead += k
		if r.nhead == len(r.head) {
			r.left = 4 + int(binary.BigEndian.Uint32(r.head[0:4])) - len(r.head)
		}
		b = b[k:]
	}
	if r.nhead < len(r.head) {
		return b
	}
	k := min(r.left, len(b))
	r.left -= k
	if r.left > 0 {
		return b[k:]
	}
	r.shook, r.nhead = true, 0
	ms := int32(binary.BigEndian.Uint32(r.head[8:12]))
	sid := int64(binary.BigEndian.Uint64(r.head[12:20]))
	r.expired = sid == 0 // go-zookeeper's test (authenticate)
	r.mu.Lock()
	written := r.connect
	r.mu.Unlock()
	// The server's own words, for the replay's bounds (docs/replay.md).
	trace.Handshook(r.tap, sid, ms, written)
	if mutant.On(mutant.HandshakeFromAnswer) {
		written = now // seeded bug: the leader's touch dated by the answer's read
	}
	t := r.tap
	if ms > 0 {
		// The loss bounds (see lease.go) use the negotiated timeout, which
		// go-zookeeper keeps unexported and the server may have set other
		// than the one asked for.
		t.timeoutMs.Store(ms)
		t.touched.Confirm(written, now)
		trace.Touched(t, written, now)
		t.hsMu.Lock()
		t.hs = t.hs.next(written, sid, time.Duration(ms)*time.Millisecond)
		t.hsMu.Unlock()
	}
	t.sessionReached()
	return b[k:]
}

// answered is the head of a reply with xid read now: the packet it
// answers, and every one before it, was touched. A watch event (-1)
// answers nothing; an auth's reply only takes its packet out (untouched),
// leaving the packets before it to their own replies.
func (r *replies) answered(xid int32, now time.Time) {
	if xid == -1 {
		return
	}
	r.mu.Lock()
	i := 0
	for i < len(r.out) && r.out[i].xid != xid {
		i++
	}
	if i == len(r.out) { // not ours (or already taken): nothing to say
		r.mu.Unlock()
		return
	}
	p := r.out[i]
	if p.untouched() {
		r.out = append(r.out[:i], r.out[i+1:]...)
		r.mu.Unlock()
		return
	}
	r.out = r.out[i+1:]
	r.mu.Unlock()
	r.tap.touched.Confirm(p.at, now)
	trace.Touched(r.tap, p.at, now)
}

// Recorder is one connection's writes and reads as a tapped connection
// notes them, without a socket: a seam for the lease's explorer (package
// session), which drives a floor over a double of go-zookeeper's
// connection. Its first write is the connect request, its first read the
// connect answer.
type Recorder struct{ rep *replies }

// NewRecorder starts a connection's record.
func (t *Tap) NewRecorder() *Recorder { return &Recorder{rep: &replies{tap: t}} }

// Write notes frame, a packet go-zookeeper would write (its length, xid
// and opcode first), as written now.
func (r *Recorder) Write(frame []byte) {
	now := time.Now()
	t := r.rep.tap
	t.began(frame, now)
	w := t.take(frame, now)
	r.rep.wrote(frame, now)
	t.count(opcode(frame))
	t.wrote(w)
}

// Read notes frame, a whole frame go-zookeeper would read, as read now.
func (r *Recorder) Read(frame []byte) { r.rep.read(frame, time.Now()) }
