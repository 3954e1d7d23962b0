package wire

import (
	"crypto/tls"
	"encoding/binary"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/mono"
	"github.com/tierlock/tierlock/internal/mutant"
)

// Tap observes the bytes go-zookeeper writes to its connection, for two
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
type Tap struct {
	dial   func(network, address string, timeout time.Duration) (net.Conn, error) // nil: net.DialTimeout
	tls    *tls.Config                                                            // nil: plaintext (tls.go)
	hosts  *hosts                                                                 // with TLS: the servers, unresolved
	chroot *chroot                                                                // nil: none (chroot.go)

	mu      sync.Mutex
	waiters map[string]*Waiter // by the first path the request names
	n       atomic.Int32       // len(waiters), read without mu on every write

	ringMu sync.Mutex
	writes int64           // writes begun
	ring   [RingSize]int64 // when write w began (mono.Time), at ring[w%RingSize]

	// timeoutMs is the session timeout the server granted in its last
	// connect response (touch.go).
	timeoutMs atomic.Int32

	// What the replies confirm of the session's touches (touch.go).
	touched Touches
	hsMu    sync.Mutex
	hs      Handshake // the latest connect answer with a session

	// out counts the requests of the session's locks handed to
	// go-zookeeper and not answered yet (Session.run): with few out, a
	// write has nothing to batch with, and goes out on the writer's own
	// goroutine (see tappedConn.Write).
	out atomic.Int32

	live      atomic.Pointer[tappedConn]         // the connection whose order came to the tap's requests (order.go); nil: none
	shaking   atomic.Pointer[tappedConn]         // the connection with a session on its way there; nil: none
	creds     atomic.Int32                       // credentials go-zookeeper holds, and re-sends on each new connection (order.go)
	zkw       zkWatches                          // the watches go-zookeeper holds (zkwatches.go)
	calls     calls                              // Call's requests out (call.go)
	dialErr   atomic.Pointer[error]              // the last dial's error, or its handshake's (handshake.go)
	awaiting  atomic.Pointer[awaiting]           // the connection whose handshake is unanswered yet; nil: none (handshake.go)
	refused   refusals                           // servers that refused this side (tls.go)
	provider  atomic.Pointer[zk.DNSHostProvider] // go-zookeeper's own host provider, without TLS (tls.go)
	onDial    func(address string, err error)    // told of each dial (Config.OnDial); nil: none
	closing   chan struct{}                      // closed when the Session starts closing
	closeOnce sync.Once

	// Test seams: written counts every request written, by opcode; onWrite,
	// when set, runs before each write and may fail it (the connection is
	// then closed, as a real failed write leaves it).
	written [128]atomic.Int64
	onWrite atomic.Pointer[func(op int32, b []byte) error]
}

// Config is what a Tap's connections are made with.
type Config struct {
	// Dial opens a connection (nil: net.DialTimeout).
	Dial func(network, address string, timeout time.Duration) (net.Conn, error)
	// TLS, when set, makes each connection a TLS client on what Dial
	// returns (tls.go).
	TLS *tls.Config
	// Chroot, when set, is the valid absolute path, not "/", that every
	// path of the session lives under (chroot.go).
	Chroot string
	// OnDial (nil: none) is told of each dial's outcome (a nil error:
	// connected), and again of a connection whose server did not answer
	// the handshake in time (an *UnansweredError), on the goroutine that
	// dials; it must not block. The session tells an outage from it
	// (package session's outage.go).
	OnDial func(address string, err error)
}

// New returns a tap whose connections are made as cfg says.
func New(cfg Config) *Tap {
	t := &Tap{dial: cfg.Dial, tls: cfg.TLS, onDial: cfg.OnDial, closing: make(chan struct{})}
	t.touched.grain = touchGrain
	t.refused.all = make(chan struct{})
	if cfg.TLS != nil {
		t.hosts = &hosts{}
	}
	if cfg.Chroot != "" {
		t.chroot = &chroot{prefix: []byte(cfg.Chroot)}
	}
	return t
}

// Handed counts a request handed to go-zookeeper, Answered its answer:
// with few out, a write has nothing to batch with (see tappedConn.Write).
func (t *Tap) Handed()   { t.out.Add(1) }
func (t *Tap) Answered() { t.out.Add(-1) }

// GrantedTimeout is the session timeout the server granted in its last
// connect response; 0 before the first.
func (t *Tap) GrantedTimeout() time.Duration {
	return time.Duration(t.timeoutMs.Load()) * time.Millisecond
}

// Close tells the connections that the session is closing: a write held
// for batching goes out at once.
func (t *Tap) Close() { t.closeOnce.Do(func() { close(t.closing) }) }

// Written reports how many requests with opcode op were written (a test
// seam, and a count for the curious). A request is counted as it is handed
// to the socket, before its reply can be read: once its caller has the
// reply, it is in the count (a failed write is counted too).
func (t *Tap) Written(op int32) int64 {
	if op < 0 || int(op) >= len(t.written) {
		return 0
	}
	return t.written[op].Load()
}

// SetOnWrite sets fn (nil: none) to run before each write, with the
// request as the server will read it (under a chroot, rewritten); an
// error fails the write and closes the connection, as a real failed write
// does. A test seam.
func (t *Tap) SetOnWrite(fn func(op int32, b []byte) error) {
	if fn == nil {
		t.onWrite.Store(nil)
		return
	}
	t.onWrite.Store(&fn)
}

// RingSize bounds how many writes a request's reply may come after its
// own write and still renew the lease: the requests in flight are bounded
// well below it (see inflight).
const RingSize = 8192

// Waiter is a pipelined request's interest in its own write (Expect).
type Waiter struct {
	ops  []int32
	sent chan struct{} // closed when the request is written
	then func()        // called once sent is closed (ExpectFunc); nil: none
	at   atomic.Int64  // when the write began (mono.Time; 0: not yet): set as it begins (take)
	key  string        // the first path its request names
}

// Sent is closed once the request is written: a request queued after that
// is written after it.
func (w *Waiter) Sent() <-chan struct{} { return w.sent }

// WrittenAt returns when the request's write began, once it has begun
// (ok false before). A request of the same key and opcode whose write
// began after Expect and before this one's would have taken the waiter:
// the time is then that earlier write's, never a later one's.
//
// It is known as the write begins, before the bytes go out and so before
// any reply: the reply can reach the request's caller before the write
// returns to the send loop, and a proof answered then found its waiter
// untold and was dated by an earlier request's write (TestWrittenAtBeforeTheReply).
func (w *Waiter) WrittenAt() (at time.Time, ok bool) {
	if ns := w.at.Load(); ns != 0 {
		return mono.Time(ns).Std(), true
	}
	return time.Time{}, false
}

// Key is the key the waiter was registered under ("" for nil).
func (w *Waiter) Key() string {
	if w == nil {
		return ""
	}
	return w.key
}

// The ZooKeeper request opcodes the session uses.
const (
	OpCreate       int32 = 1
	OpDelete       int32 = 2
	OpGetData      int32 = 4
	OpSetData      int32 = 5
	OpSync         int32 = 9
	OpGetChildren2 int32 = 12
	OpMulti        int32 = 14
	// OpSetWatches is the request go-zookeeper sends on a new connection
	// to re-arm the watches of the previous one.
	OpSetWatches int32 = 101
)

// Expect registers interest in the next request written with one of the
// opcodes ops whose first path is key (a create's path, the first op's of a
// multi). Keys are unique: a protected name's GUID, a node's path.
func (t *Tap) Expect(key string, ops ...int32) *Waiter { return t.ExpectFunc(key, nil, ops...) }

// ExpectFunc is Expect that also calls fn (nil: nothing) once the request
// is written, on the goroutine that wrote it: fn must be quick and must
// not block.
func (t *Tap) ExpectFunc(key string, fn func(), ops ...int32) *Waiter {
	w := &Waiter{ops: ops, sent: make(chan struct{}), then: fn, key: key}
	t.mu.Lock()
	if t.waiters == nil {
		t.waiters = make(map[string]*Waiter)
	}
	t.waiters[key] = w
	t.n.Store(int32(len(t.waiters)))
	t.mu.Unlock()
	return w
}

// Forget drops a waiter whose request completed or failed without being
// seen (for example because the connection closed first).
func (t *Tap) Forget(key string, w *Waiter) {
	t.mu.Lock()
	if t.waiters[key] == w {
		delete(t.waiters, key)
		t.n.Store(int32(len(t.waiters)))
	}
	t.mu.Unlock()
}

// Mark returns how many writes of requests (pings not counted) have
// begun: a request queued after mark is written as a later one.
func (t *Tap) Mark() int64 {
	t.ringMu.Lock()
	defer t.ringMu.Unlock()
	return t.writes
}

// FirstWriteAfter returns when the first write of a request after mark
// began, or ok false when that write has not begun or has left the ring.
func (t *Tap) FirstWriteAfter(mark int64) (at time.Time, ok bool) {
	t.ringMu.Lock()
	defer t.ringMu.Unlock()
	w := mark + 1
	if w > t.writes || t.writes-w >= RingSize-1 {
		return time.Time{}, false
	}
	return mono.Time(t.ring[w%RingSize]).Std(), true
}

// began records the start of a write of frame, unless frame is a ping.
// The ring dates proofs (FirstWriteAfter): a request queued after a mark
// is written no earlier than the first request written after it, since
// go-zookeeper writes its requests in their order. Its pings are not in
// that order: its ticker's ping may go out between a request's queueing
// and its write, and dated by it, the proof was as old as its queueing
// (TestPingDatesNoProof; zklock.TestLeaseCountsFromTheWrite lapsed so,
// with a busy core beside it, once in five make tests).
func (t *Tap) began(frame []byte, start time.Time) {
	ping := opcode(frame) == opPing
	if mutant.On(mutant.PingsInRing) {
		ping = false // seeded bug: a ping dates the proofs queued before it
	}
	if ping {
		return
	}
	t.ringMu.Lock()
	t.writes++
	t.ring[t.writes%RingSize] = int64(mono.Of(start))
	t.ringMu.Unlock()
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
	if op == OpMulti {
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

// count counts a request of opcode op (Written).
func (t *Tap) count(op int32) {
	if op >= 0 && int(op) < len(t.written) {
		t.written[op].Add(1)
	}
}

// wrote tells w (nil: none), the waiter take found for a request, that
// its bytes are out.
func (t *Tap) wrote(w *Waiter) {
	if w != nil {
		close(w.sent)
		if w.then != nil {
			w.then()
		}
	}
}

// take takes the waiter of the request framed in b out of the waiters as
// its write begins at start, and dates it (nil when it has none). Taken
// there and not once the bytes are out: by then an earlier request of the
// same key (the lease's previous sync) could have been answered and the
// next one's waiter registered, which took the earlier write for its own,
// a whole renewal early (TestLateToldWriteTakesNoLaterWaiter).
func (t *Tap) take(b []byte, start time.Time) *Waiter {
	op := opcode(b)
	if t.n.Load() == 0 || op < 0 {
		return nil
	}
	p := firstPath(b, op)
	if p == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.waiters[string(p)] // no allocation: the compiler looks up string(bytes) in place
	if w == nil || !slices.Contains(w.ops, op) {
		return nil
	}
	delete(t.waiters, string(p))
	t.n.Store(int32(len(t.waiters)))
	w.at.Store(int64(mono.Of(start)))
	return w
}

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
