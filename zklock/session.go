package zklock

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/closed"
	"github.com/tierlock/tierlock/zklock/internal/wire"
	"github.com/tierlock/tierlock/zklock/internal/writes"
)

// Session is one client's connection to ZooKeeper, shared by all its locks,
// like etcd's concurrency.Session. It tracks the ZooKeeper session's state
// and the holds of its locks, and ends those holds when the connection
// drops, the session expires or is replaced, or the session can no longer
// be confirmed with the ensemble's leader (see lease.go). A Session
// outlives an expiry: go-zookeeper reconnects with a new session and the
// session's locks work again.
//
// State comes from a source that never drops an event: go-zookeeper's
// event callback, which it calls synchronously for every event (under
// Connect), or polling Conn.State and Conn.SessionID (under NewSession).
// Its event channel, which drops events once six are unread, is not relied
// on.
type Session struct {
	conn *zk.Conn
	tap  *wire.Tap // nil when the connection is the caller's: no pipelining
	link link      // what the session knows of its connection
	cfg  sessionConfig
	log  *slog.Logger
	life lifetime // Close: the session's context, its background goroutines

	st      sessionState  // state, valid holds, the lease: under st.mu (state.go)
	notes   notifier      // state changes for cfg.listener
	flight  inflight      // the locks' requests in flight (send.go)
	writes  *writes.Queue // writes not yet answered, and the writer (writelink.go)
	watches watches       // watch callbacks by path (state.go)
	auth    authGate      // see auth.go
	out     outage        // told to the log (outage.go)
}

// link is what a session knows of its connection besides the connection
// itself.
type link struct {
	ownsConn bool
	zc       atomic.Pointer[zk.Conn] // conn, once zk.Connect has returned it
	connGen  atomic.Int64            // connections that reached a session, as onEvent saw them

	// Under NewSession: the timeout the server granted (ns), read from the
	// connection on each new session, and the channel the connection's
	// Close closes (see conninfo.go); connGone is set once it has.
	granted  atomic.Int64
	quit     <-chan struct{}
	connGone atomic.Bool

	warned atomic.Int64 // the granted timeout (ns) last warned of (noteGranted)
	tcpUp  atomic.Bool  // the latest state seen before a first session was zk.StateConnected (outage.go)
}

// lifetime is how a session ends: Close cancels ctx, and waits for the
// goroutines of the session and its locks (bg).
type lifetime struct {
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	// hardStop is closed by Close when it closes a connection of its own:
	// the server then ends the session, and with it every node, so guaranteed
	// deletes can stop. Under NewSession they go on until done.
	hardStop  chan struct{}
	bg        group // goroutines of the session and its locks
	closeOnce sync.Once
}

// sessionState is the session's state as its locks see it, under mu: the
// lease's fields are guarded by mu too.
type sessionState struct {
	mu        sync.Mutex
	state     State
	sessionID int64
	ready     chan struct{} // closed on the first session
	changed   chan struct{} // closed and replaced on every state change
	closed    bool
	holds     map[sessionHold]struct{} // valid holds of this session's locks
	waiting   int                      // acquisitions with a node queued
	lease     lease                    // see lease.go
}

// State reports the session's current state.
func (s *Session) State() State {
	if s == nil {
		return StateClosed
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return s.st.state
}

// SessionID returns the id of the current ZooKeeper session (0 before the
// first one). It changes after an expiry.
func (s *Session) SessionID() int64 {
	if s == nil {
		return 0
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return s.st.sessionID
}

// Conn returns the underlying go-zookeeper connection, for reads and for
// requests this package does not make.
func (s *Session) Conn() *zk.Conn {
	if s == nil {
		return nil
	}
	return s.conn
}

// LossOnExpiryOnly reports whether the session keeps holds through
// disconnections (WithLossOnExpiryOnly): its holds may overlap another
// process's for up to an eighth of the session timeout, which code built
// on the session (leader election, say) may need to tell its users.
func (s *Session) LossOnExpiryOnly() bool { return s != nil && s.cfg.expiryOnly }

// Logger returns the logger the session and its locks log to (see
// WithLogger), for code built on the session, such as package tier.
func (s *Session) Logger() *slog.Logger {
	if s == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.cfg.logger
}

// Done is closed when the session is closed.
func (s *Session) Done() <-chan struct{} {
	if s == nil {
		return closed.Chan
	}
	return s.life.ctx.Done()
}

// Flush sends the session's writes that are held back now: a released
// node's delete waits a moment (100µs) for a create of the session to
// carry it, in one multi. A caller that waits for that delete (see
// WithDeleteHandler) and knows that no create of the session is coming
// (no other acquisition of its process on the path) calls Flush, so that
// its wait is one round trip and not that moment more: package zkcompat's
// Unlock, which returns once the server answered its node's delete.
func (s *Session) Flush() {
	if s != nil {
		s.writes.Flush()
	}
}

// The parts of a session: their types here, their workings in the file
// each names.

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
// fast while the bound was reached. The target is an eighth of the lease's
// bound, so that a request of the session, and the lease's sync behind it,
// returns well within the lease.
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

// lease is the deadline until which a session's holds are trusted; its
// fields are guarded by the Session's mu.
type lease struct {
	s        *Session
	deadline time.Time       // holds are valid until then
	proofAt  time.Time       // when the latest proof that renewed was queued
	syncAt   time.Time       // when the latest sync was queued
	inflight chan struct{}   // closed when the sync in flight completes; nil when none
	written  <-chan struct{} // closed when the sync in flight is written (under Connect; else nil)
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

// sessionHold is what the session needs of a hold of one of its locks (a
// Hold is one): to end it when the session can no longer vouch for it.
type sessionHold interface{ lose(cause error) }

// errConnClosed is the error of requests on a session whose connection its
// owner closed (NewSession).
var errConnClosed = fmt.Errorf("%w: %w", ErrSessionClosed, zk.ErrConnectionClosed)

// closedErr is why the session can no longer be used: it was closed, or
// (under NewSession) its connection was.
func (s *Session) closedErr() error {
	if s.link.connGone.Load() {
		return errConnClosed
	}
	return ErrSessionClosed
}

func (s *Session) isClosed() bool {
	select {
	case <-s.life.ctx.Done():
		return true
	default:
		return false
	}
}

// The background goroutines of a session (goBackground): requests left to
// finish after their caller gave up, guaranteed deletes, the writer's
// sends. Close waits for them: a group.

// group counts running goroutines, like a sync.WaitGroup that may be added
// to while a wait is under way: an acquisition racing Session.Close can
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

// goBackground runs fn on a goroutine the session tracks.
func (s *Session) goBackground(fn func()) {
	s.life.bg.add()
	go func() {
		defer s.life.bg.done()
		fn()
	}()
}

// awaitAuth waits until the session's credentials are in place: every
// request that creates, deletes or reads lock nodes goes after it. It
// returns the auth's failure, or ctx's error.
func (s *Session) awaitAuth(ctx context.Context) error {
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
		return ErrSessionClosed
	}
}
