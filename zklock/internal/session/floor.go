package session

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/await"
	"github.com/tierlock/tierlock/zklock/internal/wire"
	"github.com/tierlock/tierlock/zklock/internal/writes"
)

// Floor is one client's session with ZooKeeper, below the locks: the
// connection and its states, the lease, the grant of holds and their loss,
// the write path's link, retries and credentials (doc.go has the contract
// both ways). zklock.Session is a handle over it. It tracks the ZooKeeper
// session's state and the holds granted on it, and ends those holds when
// the connection drops, the session expires or is replaced, or the session
// can no longer be confirmed with the ensemble's leader (lease.go). A
// Floor outlives an expiry: go-zookeeper reconnects with a new session and
// the locks work again.
//
// State comes from a source that never drops an event: go-zookeeper's
// event callback, which it calls synchronously for every event (Dial), or
// polling the connection's State and SessionID (Wrap). Its event channel,
// which drops events once six are unread, is not relied on.
//
// Its parts are types of their own, each with the methods that keep its
// state: the state (sessionState, state.go; its poll under Wrap, poll.go),
// the valid holds (Member and holdSet, member.go; the grant, grant.go), the
// lease (Lease, lease.go; its bounds, bounds.go; its lapse, lapse.go; its
// proofs, proof.go; its renewal, renew.go), the bound on requests in
// flight (Flight, flight.go), the write path (writes.Queue, linked by
// writelink.go), the listings sent together (lister, lister.go), the
// watches (Watches, watches.go), the outage (outage.go) and the state
// listener (notifier, notify.go); the credentials' gate (authGate) is
// here, sent by auth.go. The Floor's own methods are the verbs the lock
// floor calls (here, and beside the part they reach), and its making and
// ending (dial.go, dialconn.go).
type Floor struct {
	conn Conn      // the connection: a *zk.Conn, or an explorer's double
	zc   *zk.Conn  // the same as go-zookeeper's type (Conn, trace points); nil under a double
	tap  *wire.Tap // nil when the connection is the caller's: no pipelining
	link link      // what the floor knows of its connection
	cfg  Config
	log  *slog.Logger
	life lifetime // Close: the floor's context, its background goroutines

	st      sessionState  // state, valid holds: under st.mu (state.go)
	lease   Lease         // the lease: under st.mu too (lease.go)
	flight  Flight        // the locks' requests in flight (flight.go)
	wq      *writes.Queue // the write path, linked to the connection (writelink.go)
	lister  lister        // the listings sent together (lister.go)
	watches Watches       // watch callbacks by path (watches.go)
	out     outage        // told to the log (outage.go)
	auth    authGate      // auth.go
	notes   notifier      // state changes for cfg.Listener (notify.go)
}

// link is what the floor knows of its connection besides the connection
// itself.
type link struct {
	ownsConn bool
	zc       atomic.Pointer[zk.Conn] // zc, once zk.Connect has returned it (Dial)
	conn     atomic.Pointer[Conn]    // conn, once started: what observe reads (an explorer's double too)
	connGen  atomic.Int64            // connections that reached a session, as onEvent saw them

	// Under Wrap: the least and the most timeout the servers granted the
	// session (ns), read from the connection at each connect answer seen
	// (noteGrant), and the channel the connection's Close closes (see
	// conninfo.go); connGone is set once it has.
	least, most atomic.Int64
	quit        <-chan struct{}
	connGone    atomic.Bool

	warned atomic.Int64 // the granted timeout (ns) last warned of (noteGranted)
	tcpUp  atomic.Bool  // the latest state seen before a first session was zk.StateConnected (outage.go)
}

// authGate is closed once the session's credentials are in place, or their
// sending failed for good (auth.go).
type authGate struct {
	done chan struct{}
	err  error // written before done is closed, read after
}

// wait waits until the gate is open (nil g: no gate), and returns the
// credentials' failure, or ctx's error, or ErrClosed once quit is closed.
func (g *authGate) wait(ctx context.Context, quit <-chan struct{}) error {
	if g == nil {
		return nil
	}
	select {
	case <-g.done:
		return g.err
	default:
	}
	select {
	case <-g.done:
		return g.err
	case <-ctx.Done():
		return ctx.Err()
	case <-quit:
		return ErrClosed
	}
}

// lifetime is how a floor ends: Close cancels ctx, and waits for the
// goroutines of the floor and its locks (bg).
type lifetime struct {
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	// hardStop is closed by Close when it closes a connection of its own:
	// the server then ends the session, and with it every node, so guaranteed
	// deletes can stop. Under Wrap they go on until done.
	hardStop  chan struct{}
	bg        group // goroutines of the floor and its locks
	closeOnce sync.Once
	// unwatch undoes the floor's mono.Watch, which measures this
	// process's stalls for the outage's and the lapse's lines (Dial and
	// Wrap; nil under an explorer's double, whose clock is a bubble's).
	unwatch func()
}

// The background goroutines of a session (Go): requests left to
// finish after their caller gave up, guaranteed deletes, the writer's
// sends. Close waits for them: a group.

// group counts running goroutines, like a sync.WaitGroup that may be added
// to while a wait is under way: an acquisition racing Close can
// start background work (its node's delete) after Close began waiting,
// which a WaitGroup forbids when its count is at zero ("WaitGroup is
// reused before previous Wait has returned"). wait returns once the count
// has been zero; work started after that is not waited for.
type group struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n drops to 0; nil while n is 0
}

func (g *group) add() {
	g.mu.Lock()
	if g.n == 0 {
		g.zero = make(chan struct{})
	}
	g.n++
	g.mu.Unlock()
}

func (g *group) done() {
	g.mu.Lock()
	g.n--
	if g.n == 0 {
		close(g.zero)
		g.zero = nil
	}
	g.mu.Unlock()
}

func (g *group) wait() {
	g.mu.Lock()
	z := g.zero
	g.mu.Unlock()
	if z != nil {
		<-z
	}
}

// Go runs fn on a goroutine the floor tracks: Close waits for it.
func (s *Floor) Go(fn func()) {
	s.life.bg.add()
	go func() {
		defer s.life.bg.done()
		fn()
	}()
}

// Request runs req, a request on the floor's connection made outside its
// write path, on a goroutine that Close, when it closes the connection
// (Dial's), waits for first (dial.go): go-zookeeper v1.0.4's
// CreateContainer reads its answer after a tie with Close while the
// connection's receiving goroutine may still be writing it (a data race),
// and a request queued as Close begins can block that goroutine for ever.
// Under Wrap the caller closes the connection, and Close does not wait
// for req, which may be waiting for a connection that does not come back.
// It is refused with ClosedErr once Close began, and not sent when ctx
// has ended; when ctx ends first, it returns ctx's cause and req finishes
// in the background.
func (s *Floor) Request(ctx context.Context, req func() error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	s.st.mu.Lock()
	if s.st.closed {
		s.st.mu.Unlock()
		return s.ClosedErr()
	}
	tracked := s.link.ownsConn
	if tracked {
		s.life.bg.add() // before Close sets closed: its drain waits for it
	}
	s.st.mu.Unlock()
	_, err := await.Call(ctx, func() (struct{}, error) {
		if tracked {
			defer s.life.bg.done()
		}
		return struct{}{}, req()
	})
	return err
}

// What the lock floor reads of the floor: its state and session, its
// connection, its configuration, its end; and its parts that the lock
// floor speaks to (Writes, Flight, Lease).

// State reports the floor's current state: one of the States
// (states.go).
func (s *Floor) State() int {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return s.st.state
}

// SessionID returns the id of the current ZooKeeper session (0 before the
// first one). It changes after an expiry.
func (s *Floor) SessionID() int64 {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return s.st.sessionID
}

// Conn returns the go-zookeeper connection, for the locks' reads.
func (s *Floor) Conn() *zk.Conn { return s.zc }

// Config returns what the floor was made with (its ExpiryOnly, Logger,
// MaxRetryWait are the lock floor's to read).
func (s *Floor) Config() Config { return s.cfg }

// Log returns the floor's own logger (Logger's, with component=zklock).
func (s *Floor) Log() *slog.Logger { return s.log }

// Done is closed when the floor is closed.
func (s *Floor) Done() <-chan struct{} { return s.life.ctx.Done() }

// Closed reports whether the floor is closed.
func (s *Floor) Closed() bool {
	select {
	case <-s.life.ctx.Done():
		return true
	default:
		return false
	}
}

// ClosedErr is why the floor can no longer be used: it was closed
// (ErrClosed), or under Wrap its connection was (ErrConnClosed).
func (s *Floor) ClosedErr() error {
	if s.link.connGone.Load() {
		return ErrConnClosed
	}
	return ErrClosed
}

// HardStopped reports whether Close closed the floor's own connection:
// the server then deletes the session's nodes itself.
func (s *Floor) HardStopped() bool {
	select {
	case <-s.life.hardStop:
		return true
	default:
		return false
	}
}

// Writes is the floor's write path: every write of its locks goes there.
func (s *Floor) Writes() *writes.Queue { return s.wq }

// Flight is the bound on the locks' requests in flight: their reads are
// admitted and sent there.
func (s *Floor) Flight() *Flight { return &s.flight }

// Lease is the floor's lease: its timeout and its counters.
func (s *Floor) Lease() *Lease { return &s.lease }

// OutageSince returns when the outage under way began: the session has had
// no connection to ZooKeeper since then. It is zero when the session has a
// connection (a wait that ends says so: see zklock's WaitError).
func (s *Floor) OutageSince() time.Time { return s.out.began() }

// noteGrant takes a timeout d granted the session under Wrap, in the
// session seen before (same) or a new one.
func (l *link) noteGrant(d time.Duration, same bool) {
	least, most := int64(d), int64(d)
	if same && l.least.Load() > 0 {
		least, most = min(l.least.Load(), least), max(l.most.Load(), most)
	}
	l.least.Store(least)
	l.most.Store(most)
}
