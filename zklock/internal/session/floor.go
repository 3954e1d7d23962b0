package session

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

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
type Floor struct {
	conn Conn      // the connection: a *zk.Conn, or an explorer's double
	zc   *zk.Conn  // the same as go-zookeeper's type (Conn, trace points); nil under a double
	tap  *wire.Tap // nil when the connection is the caller's: no pipelining
	link link      // what the floor knows of its connection
	cfg  Config
	log  *slog.Logger
	life lifetime // Close: the floor's context, its background goroutines

	st      sessionState  // state, valid holds, the lease: under st.mu (state.go)
	notes   notifier      // state changes for cfg.Listener (notify.go)
	flight  inflight      // the locks' requests in flight (flight.go)
	writes  *writes.Queue // writes not yet answered, and the writer (writelink.go)
	watches watches       // watch callbacks by path (state.go)
	auth    authGate      // auth.go
	out     outage        // told to the log (outage.go)
}

// Conn is what the floor asks of its go-zookeeper connection: *zk.Conn
// has it all. The lease's explorer drives the floor through a double.
type Conn interface {
	SessionID() int64
	State() zk.State
	Sync(path string) (string, error)
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	Delete(path string, version int32) error
	Multi(ops ...any) ([]zk.MultiResponse, error)
	Exists(path string) (bool, *zk.Stat, error)
	AddAuth(scheme string, auth []byte) error
	Close()
}

// link is what the floor knows of its connection besides the connection
// itself.
type link struct {
	ownsConn bool
	zc       atomic.Pointer[zk.Conn] // zc, once zk.Connect has returned it (Dial)
	conn     atomic.Pointer[Conn]    // conn, once started: what observe reads (an explorer's double too)
	connGen  atomic.Int64            // connections that reached a session, as onEvent saw them

	// Under Wrap: the timeout the server granted (ns), read from the
	// connection on each new session, and the channel the connection's
	// Close closes (see conninfo.go); connGone is set once it has.
	granted  atomic.Int64
	quit     <-chan struct{}
	connGone atomic.Bool

	warned atomic.Int64 // the granted timeout (ns) last warned of (noteGranted)
	tcpUp  atomic.Bool  // the latest state seen before a first session was zk.StateConnected (outage.go)
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
}

// sessionState is the session's state as its locks see it, under mu: the
// lease's fields are guarded by mu too.
type sessionState struct {
	mu        sync.Mutex
	state     State
	sessionID int64
	ready     chan struct{} // closed once the first session is made and told (markReady)
	changed   chan struct{} // closed and replaced on every state change
	closed    bool
	holds     map[*Member]struct{} // valid holds of the floor's locks (grant.go)
	waiting   int                  // acquisitions with a node queued
	lease     lease                // lease.go
}

// lease is the deadline until which a session's holds are trusted; its
// fields are guarded by sessionState.mu.
type lease struct {
	s        *Floor
	deadline time.Time       // holds are valid until then
	proofAt  time.Time       // when the latest proof of the session was queued
	lastK    atomic.Int64    // the write time (unix ns) of the latest proof answered in the session: a chain's k (lease.go)
	own      wire.Touches    // under Wrap, the floor's own proofs as touches (lease.go)
	syncAt   time.Time       // when the latest sync was queued
	inflight chan struct{}   // closed when the sync in flight completes; nil when none
	written  <-chan struct{} // closed when the sync in flight is written (under Dial; else nil)
	timer    *time.Timer     // fires at the deadline while holds exist
	kick     chan struct{}   // wakes the renewer

	waits, lapses atomic.Int64 // see LeaseStats

	// lapsedAt is when the lease last ran out with holds (unix ns), until
	// a proof renews it again: the end of that episode is told too.
	lapsedAt atomic.Int64

	// Proofs answered too late to renew anything: see tooLate.
	late     atomic.Int64
	lateRTT  atomic.Int64 // the latest one's round trip, ns
	warnedAt atomic.Int64 // when tooLate last warned, unix ns
}

// watches are the callbacks of the session's watches, by the path their
// events name: a waiter's predecessor (the callback sets its BooleanMutex),
// a holder's own node. Like ZooKeeper's watches they are one-shot: an
// event for a path calls and removes every callback registered on it.
type watches struct {
	mu sync.Mutex
	m  map[string][]*watchFn
}

type watchFn struct{ fn func(zk.Event) }

// notifier delivers state changes to the user's listener in order, from
// its own goroutine, so that user code never runs where state is tracked.
type notifier struct {
	fn    func(State)
	mu    sync.Mutex
	queue []State
	wake  chan struct{}
	done  chan struct{}

	closeOnce sync.Once
}

// authGate is closed once the session's credentials are in place, or their
// sending failed for good.
type authGate struct {
	done chan struct{}
	err  error // written before done is closed, read after
}

// inflight bounds the requests in flight, adapting the bound to the round
// trip it measures: cut by a quarter (at most once per round trip) when a
// request took longer than the target, raised by one when one came back
// fast while the bound was reached. The target is T/32, an eighth of how
// far the lease stays ahead of its last proof (T/4, lease.go), so that a
// request of the session, and the lease's sync behind it, returns well
// within the lease.
type inflight struct {
	mu    sync.Mutex
	n     int // admitted and not yet released
	limit int
	queue []waitingFlight // in order
	cutAt time.Time       // when limit was last cut
}

// waitingFlight is an acquire waiting for k places.
type waitingFlight struct {
	k     int
	ready chan struct{} // closed, under mu, when admitted
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

// AwaitAuth waits until the session's credentials are in place: every
// request that creates, deletes or reads lock nodes goes after it. It
// returns the auth's failure, or ctx's error.
func (s *Floor) AwaitAuth(ctx context.Context) error {
	select {
	case <-s.auth.done:
		return s.auth.err
	default:
	}
	select {
	case <-s.auth.done:
		return s.auth.err
	case <-ctx.Done():
		return ctx.Err()
	case <-s.life.ctx.Done():
		return ErrClosed
	}
}

// What the lock floor reads of the floor: its state and session, its
// connection, its configuration, its end.

// State reports the floor's current state.
func (s *Floor) State() State {
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

// ExpiryOnly reports Config.ExpiryOnly.
func (s *Floor) ExpiryOnly() bool { return s.cfg.ExpiryOnly }

// Logger returns the logger the floor and its locks log to.
func (s *Floor) Logger() *slog.Logger { return s.cfg.Logger }

// Log returns the floor's own logger (Logger's, with component=zklock).
func (s *Floor) Log() *slog.Logger { return s.log }

// MaxRetryWait is Config.MaxRetryWait: the cap of every back-off.
func (s *Floor) MaxRetryWait() time.Duration { return s.cfg.MaxRetryWait }

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

// Dispatching reports whether watch events reach the callbacks Watch
// registers: under Dial go-zookeeper calls the floor for every event,
// watch events included, synchronously and before it notifies the watch's
// own channel. Under Wrap it cannot, and watchers wait on their channels.
func (s *Floor) Dispatching() bool { return s.tap != nil }

// Writes is the floor's write path: every write of its locks goes there.
func (s *Floor) Writes() *writes.Queue { return s.writes }

// Timeout is the session timeout the server granted (the one asked for
// until a server answered): the lease's bounds derive from it (lease.go).
func (s *Floor) Timeout() time.Duration { return s.timeout() }
