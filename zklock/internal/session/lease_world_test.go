package session

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/wire"
	"github.com/tierlock/tierlock/zklock/internal/writes"
)

// The lease explorer's double (lease_explore_test.go states its faults and
// the properties): a go-zookeeper connection (this file and
// lease_client_test.go), the follower it talks to and the ensemble's
// leader (lease_server_test.go), on the virtual clock of a synctest
// bubble. The floor runs unchanged over it, through Conn. Only the
// explorer's own goroutine (the driver) moves the double; the floor's
// goroutines hand it requests (Sync, Create, Delete, Multi) and block until
// the driver answers them. Every time is a duration since the schedule's
// start.

// world is one schedule: the floor, the double, and what happened.
type world struct {
	cfg   leaseConfig
	rng   *rand.Rand // the double's draws (delays), in the driver's order
	s     *Floor
	tap   *wire.Tap
	t0    time.Time
	ag    agenda
	trace []string // the driver's log: what it did, when
	keep  bool     // keep the trace

	mu      sync.Mutex // what the floor's goroutines reach: below, and members' fields
	inbox   []*req     // handed since the driver last looked
	reqs    []*req     // every request, in the order the driver took them
	writes  []writeRec // every write the client began, as the tap has them
	lines   []logLine  // the floor's Warn lines
	members []*member
	closed  bool // the connection's Close was called
	live    int  // the explorer's goroutines (acquisitions, transactions) running
	seq     int  // counts handings and answers
	wake    chan struct{}
	// The floor's writer parked before a round (parkWriter), until the
	// driver settles.
	writerGo chan struct{}
	parked   bool
	parking  atomic.Bool // the writer parks (parkWriters)

	sid     atomic.Int64 // Conn.SessionID
	state   atomic.Int32 // Conn.State
	granted atomic.Int64 // the timeout the last connect answer granted (ns): what Wrap reads

	c    client  // the client's side (lease_client_test.go), driver only
	srv  server  // the follower and the leader (lease_server_test.go), driver only
	hist history // what the double did
	seen history // what the floor could see of it (see)

	events chan zk.Event // under Wrap: go-zookeeper's channel (nil: none)

	renewed map[renewalsKey][]bound // renewals' answers, the props' (driver only)
	walls   []func()                // the wall clock's steps taken back (unstepWall)
}

// req is a request handed to the double.
type req struct {
	n      int
	op     int32
	path   string // the first path it names: what the tap matches
	ops    []any  // a multi's ops; a create's or a delete's one op
	sid    int64  // Conn.SessionID as it was handed
	handed time.Duration
	done   chan struct{}

	handSeq  int  // its place among the double's events as handed (takeInbox)
	ansSeq   int  // and as answered (end): same-instant events in the order the floor saw them
	mark     int  // the writes begun when it was handed (len(world.writes))
	internal bool // go-zookeeper's own (a credential sent again), not the floor's

	// Written before done is closed (end).
	over     bool
	conn     *cconn        // the connection that wrote it; nil: never written
	wi       int           // its write, in world.writes
	answered time.Duration // when the client had its answer (-1: never)
	res      []zk.MultiResponse
	err      error
}

// writeRec is a write the client began: a request (an auth too), a ping,
// a connect.
type writeRec struct {
	at        time.Duration
	what      byte // 'r' a request, 'p' a ping, 'c' a connect request
	r         *req
	c         *cconn
	confirmed time.Duration // when a reply to it, or to a later write of c, came (-1: none)
}

// now is the virtual time since the schedule began.
func (w *world) now() time.Duration { return time.Since(w.t0) }

// logf notes what the driver did in the trace, when it is kept (the
// explorer's own runs keep none: a failing seed is run again with it).
func (w *world) logf(format string, args ...any) {
	if !w.keep {
		return
	}
	w.trace = append(w.trace, fmt.Sprintf("%12.6fs ", w.now().Seconds())+fmt.Sprintf(format, args...))
}

// poke wakes the driver: something of the floor's needs looking at.
func (w *world) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// dbl is the world as the floor's Conn.
type dbl struct{ w *world }

func (d dbl) SessionID() int64 { return d.w.sid.Load() }
func (d dbl) State() zk.State  { return zk.State(d.w.state.Load()) }

// GrantedTimeout is what Wrap reads of go-zookeeper's connection: the
// timeout the last connect answer granted (its sessionTimeoutMs, the one
// asked before the first).
func (d dbl) GrantedTimeout() time.Duration { return time.Duration(d.w.granted.Load()) }

func (d dbl) Sync(path string) (string, error) {
	r := d.w.call(wire.OpSync, path, nil)
	return path, r.err
}

func (d dbl) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	r := d.w.call(wire.OpCreate, path, []any{&zk.CreateRequest{Path: path, Data: data, Flags: flags, Acl: acl}})
	if r.err != nil {
		return "", r.err
	}
	return r.res[0].String, nil
}

func (d dbl) Delete(path string, version int32) error {
	return d.w.call(wire.OpDelete, path, []any{&zk.DeleteRequest{Path: path, Version: version}}).err
}

func (d dbl) Multi(ops ...any) ([]zk.MultiResponse, error) {
	r := d.w.call(wire.OpMulti, writes.OpPath(ops[0]), ops)
	return r.res, r.err
}

func (d dbl) Exists(string) (bool, *zk.Stat, error) { return false, nil, zk.ErrNoServer }

// AddAuth is a request like the others, numbered from the same counter
// (lease_connect_test.go).
func (d dbl) AddAuth(string, []byte) error { return d.w.call(opAuth, "", nil).err }

// Close is go-zookeeper's: every request not answered fails with
// zk.ErrClosing, and nothing moves after.
func (d dbl) Close() {
	w := d.w
	w.mu.Lock()
	w.closed = true
	var open []*req
	for _, r := range w.reqs {
		if !r.over {
			open = append(open, r)
		}
	}
	open = append(open, w.inbox...)
	w.inbox = nil
	w.mu.Unlock()
	for _, r := range open {
		w.end(r, nil, zk.ErrClosing)
	}
}

// call hands a request to the double and waits for its answer.
func (w *world) call(op int32, path string, ops []any) *req {
	r := &req{op: op, path: path, ops: ops, done: make(chan struct{}), answered: -1, wi: -1}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		w.end(r, nil, zk.ErrClosing)
		return r
	}
	r.sid, r.handed, r.mark = w.sid.Load(), w.now(), len(w.writes)
	w.inbox = append(w.inbox, r)
	w.mu.Unlock()
	w.poke()
	<-r.done
	return r
}

// end answers r (res, err), unless it was answered already (Close fails
// what the driver may still answer).
func (w *world) end(r *req, res []zk.MultiResponse, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r.over {
		return
	}
	w.seq++
	r.over, r.res, r.err, r.answered, r.ansSeq = true, res, err, w.now(), w.seq
	close(r.done)
}

// takeInbox takes the requests handed since the last look, in an order
// that does not depend on which goroutine ran first: at one instant the
// floor's goroutines race to go-zookeeper's queue, so any order is one
// go-zookeeper could see.
func (w *world) takeInbox() []*req {
	w.mu.Lock()
	in := w.inbox
	w.inbox = nil
	if w.closed {
		in = nil
	}
	slices.SortStableFunc(in, func(a, b *req) int {
		if a.op != b.op {
			return int(a.op - b.op)
		}
		return strings.Compare(a.path, b.path)
	})
	for _, r := range in {
		w.seq++
		r.n, r.handSeq = len(w.reqs), w.seq
		w.reqs = append(w.reqs, r)
	}
	w.mu.Unlock()
	return in
}

// record notes a write the client begins now on c, in the tap as
// go-zookeeper's tapped connection would (its frame: length, xid, opcode,
// then the first path; a multi's after 9 bytes of header), and returns its
// index.
func (w *world) record(c *cconn, what byte, r *req) int {
	var frame []byte
	switch what {
	case 'p':
		frame = header(-2, 11, 0)
	case 'c':
		frame = make([]byte, 48) // a connect request: protocol version, zxid, timeout, session, password
		binary.BigEndian.PutUint32(frame, 44)
	default:
		if r.op == opAuth {
			frame = authFrame(r.xid())
			break
		}
		frame = requestFrame(r.xid(), r.op, r.path)
	}
	w.mu.Lock()
	i := len(w.writes)
	w.writes = append(w.writes, writeRec{at: w.now(), what: what, r: r, c: c, confirmed: -1})
	w.mu.Unlock()
	if c.rec != nil {
		c.rec.Write(frame)
	}
	return i
}

// confirm notes that a reply to c's write i came now: it and every write
// of c before it were touched.
func (w *world) confirm(c *cconn, i int) {
	for k := max(c.acked+1, c.first); k <= i; k++ {
		if w.writes[k].c == c {
			w.writes[k].confirmed = w.now()
		}
	}
	c.acked = max(c.acked, i)
}

// xid is the request's xid on the wire: go-zookeeper numbers them.
func (r *req) xid() int32 { return int32(r.n + 1) }

// header is a request's length, xid and opcode, with room for extra bytes.
func header(xid, op int32, extra int) []byte {
	b := make([]byte, 12, 12+extra)
	binary.BigEndian.PutUint32(b, uint32(8+extra))
	binary.BigEndian.PutUint32(b[4:], uint32(xid))
	binary.BigEndian.PutUint32(b[8:], uint32(op))
	return b
}

// requestFrame is the start of a request naming path first.
func requestFrame(xid, op int32, path string) []byte {
	pre := 0
	if op == wire.OpMulti {
		pre = 9 // the first op's header: type, done, error
	}
	b := header(xid, op, pre+4+len(path))
	b = append(b, make([]byte, pre)...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(path)))
	return append(b, path...)
}

// authFrame is an auth request as go-zookeeper frames it: its header,
// then type 0, the scheme and the credential.
func authFrame(xid int32) []byte {
	const scheme, cred = "digest", "explorer:secret"
	b := header(xid, opAuth, 4+4+len(scheme)+4+len(cred))
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(len(scheme)))
	b = append(b, scheme...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(cred)))
	return append(b, cred...)
}

// replyFrame is a reply's frame as far as the tap reads it: a length of 4
// and the xid (the zxid, error and body are not read).
func replyFrame(xid int32) []byte {
	b := binary.BigEndian.AppendUint32(nil, 4)
	return binary.BigEndian.AppendUint32(b, uint32(xid))
}

// connectAnswer is the server's answer to a connect request: protocol
// version, timeout (ms; 0: the session expired), session id, password.
func connectAnswer(ms int32, id int64) []byte {
	b := binary.BigEndian.AppendUint32(nil, 36)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(ms))
	b = binary.BigEndian.AppendUint64(b, uint64(id))
	b = binary.BigEndian.AppendUint32(b, 16)
	return append(b, make([]byte, 16)...)
}

// hooks are the test seams of the floor w explores: its poll's period
// (pollFor), its writer's gate (parkWriters) and the renewer's wake
// (wokeHook).
func (w *world) hooks() *Hooks {
	return &Hooks{PollEvery: pollFor, WriterGate: func(<-chan struct{}) {
		if w.parking.Load() {
			w.parkWriter()
		}
	}, Woke: func() {
		if fn := wokeHook.Load(); fn != nil {
			(*fn)()
		}
	}}
}

// pollFor is the poll period of the floors explored (0: the library's;
// explorePolls sets it), wokeHook what runs as a proof's new k wakes their
// renewer (TestLeaseExploreWakeOrder).
var (
	pollFor  time.Duration
	wokeHook atomic.Pointer[func()]
)

// parkWriters has w's floor's writer parked before each round
// (parkWriter) until the returned function is called.
func (w *world) parkWriters() (unpark func()) {
	w.parking.Store(true)
	return func() { w.parking.Store(false) }
}

// parkWriter holds the floor's writer before its round until the driver
// settles (settle): by then every goroutine woken at this instant has
// handed its writes, so that a round gathers the same writes in every run
// of a schedule. Without it the writer, woken at one instant with an
// acquisition, took its round before or after that acquisition handed its
// create, as the Go scheduler ran them: a multi of two creates in one
// run, one create in the other (TestLeaseExploreDeterministic, 7 and 9
// seeds of 20,000).
func (w *world) parkWriter() {
	w.mu.Lock()
	if w.writerGo == nil {
		w.writerGo = make(chan struct{})
	}
	ch := w.writerGo
	w.parked = true
	w.mu.Unlock()
	<-ch
}

// settle lets the floor settle at this instant: every goroutine blocked,
// and then the writer, if it parked, let go to take its round, the writes
// queued at this instant in an order of their own (writes.OrderInstants),
// until it did not park again.
func (w *world) settle() {
	for {
		synctest.Wait()
		w.mu.Lock()
		ch, parked := w.writerGo, w.parked
		w.writerGo, w.parked = nil, false
		w.mu.Unlock()
		if !parked {
			return
		}
		w.s.wq.OrderInstants()
		close(ch)
	}
}
