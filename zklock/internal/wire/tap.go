package wire

import (
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/mono"
)

// The tap and the connections it taps, as they are held: the Tap (made by
// New, as Config says) with its simplest verbs, each connection
// (tappedConn), and the records they keep for one another: pipelined
// requests' waiters (Waiter), the tap's own requests out (calls),
// handshakes awaited (awaiting), servers that refused (refusals), and a
// connection's frames and replies (frames, replies). What each stage does
// with them is in a file of its own.

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
// go-zookeeper writes each request with a single Write (conn.go queues
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

// PathLen is how many bytes path takes in a request as the server reads
// it: with a chroot, the chroot's bytes before it (request). The write
// path sizes its requests by it (the server drops the connection of one
// over its jute.maxbuffer).
func (t *Tap) PathLen(path string) int {
	if t.chroot == nil {
		return len(path)
	}
	return len(t.chroot.prefix) + len(below(path))
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

// calls is the tap's requests out, by xid.
type calls struct {
	next atomic.Uint32 // the last xid given, as an offset in the range
	mu   sync.Mutex
	out  map[int32]*call
}

// call is one request out: the connection it went on, and its answer.
type call struct {
	c     *tappedConn
	done  chan struct{} // closed once reply or err is set
	reply Reply
	err   error
}

// awaiting is a connection whose connect request was written at at and
// not answered yet.
type awaiting struct {
	addr string
	at   time.Time
}

// refusals tracks the servers that refused this side since the last
// connection that reached a session (TLS refused, or TLS spoken to a
// plain client): when every server has, Connect stops waiting (Refused)
// instead of retrying until its deadline.
type refusals struct {
	mu      sync.Mutex
	by      map[string]bool
	last    error         // the last refusal
	all     chan struct{} // closed when every server refused
	closed  bool
	reached bool            // a connection reached a session: no more probes
	probed  map[string]bool // addresses asked whether they speak TLS (probeTLS)
}

// tappedConn is a connection of the session's go-zookeeper client, dialed
// through the wire tap: it reports each request written to the tap, reads
// and writes through buffers, and notes the connect response.
type tappedConn struct {
	net.Conn
	tap    *Tap
	addr   string  // the server's, as dialed
	frames *frames // the replies read frame by frame; the chroot, if any (frames.go)

	// What was written and what the replies confirm (touch.go). The
	// first bytes read on a connection are the server's connect
	// response; go-zookeeper's connecting goroutine reads them before any
	// other reader exists.
	rep      replies
	released bool   // responses flow freely (see holdFirstReply)
	shook    bool   // the connect answer was read (see Read)
	order    *order // where the connection is in the order it keeps (order.go)

	// The handshake (handshake.go), on the goroutine that writes the
	// connect request and reads its answer: when the answer is due (zero:
	// no bound), and the tap's record of the wait until it ends.
	connectOut bool // the connect request, the connection's first write, was written
	answerBy   time.Time
	awaiting   *awaiting

	watchesOut     chan struct{} // closed when setWatches is written
	watchesOutOnce sync.Once
	closed         chan struct{} // closed by Close
	closeOnce      sync.Once

	// Read buffers what the socket has: go-zookeeper reads every reply
	// in two reads (its length, then the rest), and under load several
	// replies and events arrive together, so one system call serves
	// them. Only one goroutine reads at a time (go-zookeeper's connecting
	// goroutine, then its receive loop).
	rbuf [readBuffer]byte
	r, w int // rbuf[r:w] is read from the socket and not yet returned
	// go-zookeeper sets a read deadline before each reply and clears it
	// after, on the reading goroutine; the socket needs one only when it
	// is read (see SetReadDeadline).
	rdeadline, rapplied time.Time

	// The write side (see Write): what go-zookeeper wrote and the socket
	// has not taken yet, sent by one flushing goroutine at a time.
	wmu      sync.Mutex
	wcond    sync.Cond // on wmu; signalled when out is taken or werr set
	out      []byte    // written by go-zookeeper, not yet handed to the socket
	spare    []byte    // the flusher's last batch, for reuse
	outBy    time.Time // the write deadline in force when out's first bytes came
	deadline time.Time // the write deadline go-zookeeper set last
	flushing bool      // a flusher goroutine is running
	werr     error     // the socket failed, or the connection closed
}

// readBuffer is the size of a connection's read buffer.
const readBuffer = 32 << 10

// frames is a connection's reading of its replies frame by frame, and
// its side of the chroot (chroot.go), when it has one: requests are
// rewritten as go-zookeeper writes them, replies as it reads them. The
// replies to the tap's own requests (call.go) are taken out of the
// stream: go-zookeeper never reads them.
type frames struct {
	r *chroot // nil: none

	// The writing side: one goroutine at a time (see Tap).
	out         []byte // the last request rewritten, reused
	wroteFirst  bool   // the connect request, which has no paths, went out
	mu          sync.Mutex
	replyOp     map[int32]int32 // by xid: the opcode of a request whose reply carries paths
	readingSide                 // the reading side: one goroutine at a time (see tappedConn)
}

type readingSide struct {
	readFirst bool   // the connect response, which has no paths, came
	frame     []byte // the head of the frame being read, or all of it
	ready     []byte // what go-zookeeper is to read next (in frame's storage)
	left      int    // then this many bytes, passed on from the socket as they come
}

// replies is one connection's packets written and not yet answered, and
// the reading of the reply frames that answer them: the tap confirms a
// touch as each reply's head is read. The writing side (wrote) runs on the
// goroutine that writes, the reading side (read) on the one that reads;
// mu is taken by both.
type replies struct {
	tap *Tap

	mu      sync.Mutex
	first   bool      // the connect request was written
	connect time.Time // when it was written
	out     []pending // written since, not answered, oldest first

	// The reading side: the connect answer's first 20 bytes, then each
	// reply frame's head (its length and xid).
	head  [20]byte
	nhead int
	left  int  // bytes of the current frame still to come
	shook bool // the connect answer was read
	// expired: the connect answer said the session expired (no session
	// id): go-zookeeper drops its watches and dials again for a new one.
	expired bool
}
