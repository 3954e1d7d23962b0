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

	st      sessionState // state, valid holds, the lease: under st.mu (state.go)
	notes   notifier     // state changes for cfg.listener
	flight  inflight     // the locks' requests in flight (send.go)
	dels    deleteQueue  // released nodes not yet deleted (deletes.go)
	watches watches      // watch callbacks by path (state.go)
	auth    authGate     // see auth.go
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
	holds     map[*Hold]struct{} // valid holds of this session's locks
	waiting   int                // acquisitions with a node queued
	lease     lease              // see lease.go
}

// Connect dials the ZooKeeper servers (host:port; a missing port means
// 2181) and waits until a session is established, and its credentials
// (WithDigestAuth) are accepted, or ctx ends; when ctx has no deadline, for
// at most ConnectTimeout. Failing, it returns ctx's error with the last
// dial error, such as "connection refused".
func Connect(ctx context.Context, servers []string, opts ...SessionOption) (*Session, error) {
	if ctx == nil {
		return nil, ErrNilContext
	}
	servers, err := cleanServers(servers)
	if err != nil {
		return nil, err
	}
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, ConnectTimeout)
		defer cancel()
	}
	s := newSession(wire.New(cfg.dialer, cfg.logger.With("component", "zklock")), true, cfg)
	conn, _, err := zk.Connect(servers, cfg.timeout,
		zk.WithDialer(s.tap.Dialer()),
		zk.WithEventCallback(s.onEvent),
		zk.WithLogger(zkLogger{cfg.logger}),
		zk.WithLogInfo(false))
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("zklock: connect: %w", err)
	}
	s.start(conn)
	// Events that came before conn was known were ignored: catch up.
	s.observe(conn.State())
	select {
	case <-s.st.ready:
	case <-ctx.Done():
		s.Close()
		if dialErr := s.tap.LastDialErr(); dialErr != nil {
			return nil, fmt.Errorf("zklock: connect to %v: no session: %w (last dial error: %w)", servers, ctx.Err(), dialErr)
		}
		return nil, fmt.Errorf("zklock: connect to %v: no session: %w", servers, ctx.Err())
	}
	if len(cfg.digests) > 0 {
		if err := s.authenticate(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// ConnectTimeout bounds a Connect whose context has no deadline: a server
// that cannot be reached makes it fail after this long, with the last dial
// error in its error, instead of waiting for ever.
const ConnectTimeout = 10 * time.Second

// NewSession wraps a connection the caller already has; Close leaves conn
// open. Since the callback that go-zookeeper calls for every event can only
// be installed by zk.Connect, such a session learns its state by polling
// conn.State and conn.SessionID every few milliseconds, and by reading
// events, which may be nil (it then must not be read by anyone else: the
// session drains it). Requests are not pipelined (that needs the dialer
// Connect installs), so prefer Connect. The loss bounds are derived from
// the timeout the server granted, read from the connection (conninfo.go),
// or from WithSessionTimeout when that is smaller. When the caller closes
// conn, the session is over: waits on it end with ErrSessionClosed and
// holds are told they are lost. Credentials (WithDigestAuth) are sent in
// the background; the session's lock requests wait for them, and fail
// with their error.
func NewSession(conn *zk.Conn, events <-chan zk.Event, opts ...SessionOption) (*Session, error) {
	if conn == nil {
		return nil, fmt.Errorf("%w: a connection is required", ErrNilSession)
	}
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	s := newSession(nil, false, cfg)
	s.link.quit = connQuit(conn)
	select {
	case <-s.link.quit:
		s.stop()
		return nil, fmt.Errorf("zklock: new session: %w", zk.ErrConnectionClosed)
	default:
	}
	s.start(conn)
	s.observe(conn.State())
	s.goBackground(func() { s.poll(events) })
	if len(cfg.digests) > 0 {
		s.goBackground(func() { _ = s.authenticate(s.life.ctx) })
	}
	return s, nil
}

func newSession(tap *wire.Tap, owns bool, cfg sessionConfig) *Session {
	s := &Session{tap: tap, cfg: cfg, log: cfg.logger.With("component", "zklock")}
	s.link.ownsConn = owns
	s.life.hardStop = make(chan struct{})
	s.life.ctx, s.life.cancel = context.WithCancel(context.Background())
	s.st.ready, s.st.changed = make(chan struct{}), make(chan struct{})
	s.st.holds = make(map[*Hold]struct{})
	s.notes.init(cfg.listener)
	s.dels.init(s)
	s.st.lease.init(s)
	s.auth.init(len(cfg.digests) > 0)
	return s
}

// start records conn and starts the session's goroutines.
func (s *Session) start(conn *zk.Conn) {
	s.conn = conn
	s.link.zc.Store(conn)
	if s.cfg.listener != nil {
		s.goBackground(s.notes.run)
	}
	s.goBackground(s.st.lease.renew)
}

// stop ends a session whose connection never came up.
func (s *Session) stop() {
	s.life.cancel()
	s.notes.close()
	s.life.bg.wait()
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

// timeout is the session timeout the loss bounds derive from: the one the
// server negotiated when known (from the connect response under Connect,
// from the connection under NewSession), else the one asked for; the
// smaller of the two, which only shortens the bounds.
func (s *Session) timeout() time.Duration {
	granted := time.Duration(s.link.granted.Load())
	if s.tap != nil {
		granted = s.tap.GrantedTimeout()
	}
	if granted > 0 {
		return min(granted, s.cfg.timeout)
	}
	return s.cfg.timeout
}

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

// Close ends the session: every hold on it ends (ErrSessionClosed), locks
// on it report ErrSessionClosed, and background work stops. A connection
// made by Connect is closed, and the server deletes the session's
// ephemeral nodes at once. Under NewSession the caller's connection stays
// open, so Close waits until the deletes of released nodes are done (or
// their session is over; see deleteGuaranteed). Close is idempotent.
func (s *Session) Close() error {
	if s == nil {
		return errNil("Session")
	}
	// Concurrent calls wait for the first to finish.
	s.life.closeOnce.Do(s.close)
	return nil
}

func (s *Session) close() {
	s.closeState()
	s.st.mu.Lock()
	s.st.closed = true
	s.st.mu.Unlock()
	s.life.cancel()
	s.st.lease.stop()
	s.dels.stop()
	s.notes.close()
	// Every goroutine of ours ends on s.life.ctx, on hardStop, or on a request
	// that completes (the closed connection fails it at once), except the
	// guaranteed deletes under NewSession, which end when their node or
	// session is gone.
	if s.tap != nil {
		s.tap.Close()
	}
	drained := make(chan struct{})
	go func() {
		s.life.bg.wait()
		close(drained)
	}()
	if s.link.ownsConn {
		// Let requests in flight finish before closing the connection:
		// go-zookeeper v1.0.4 can block its connection goroutine for ever
		// when a request queued as Close begins also fails its write (its
		// reply channel then gets one answer too many). Normally this takes
		// milliseconds; a connection that is down gets wire.CloseGrace.
		t := time.NewTimer(wire.CloseGrace)
		select {
		case <-drained:
		case <-t.C:
		}
		t.Stop()
		close(s.life.hardStop)
		s.conn.Close()
	}
	<-drained
}

func (s *Session) isClosed() bool {
	select {
	case <-s.life.ctx.Done():
		return true
	default:
		return false
	}
}

func (s *Session) hardStopped() bool {
	select {
	case <-s.life.hardStop:
		return true
	default:
		return false
	}
}
