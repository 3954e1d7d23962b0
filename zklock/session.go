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
	conn     *zk.Conn
	tap      *wireTap // nil when the connection is the caller's: no pipelining
	ownsConn bool
	cfg      sessionConfig
	log      *slog.Logger

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	// hardStop is closed by Close when it closes a connection of its own:
	// the server then ends the session, and with it every node, so guaranteed
	// deletes can stop. Under NewSession they go on until done.
	hardStop chan struct{}
	bg       group // goroutines of the session and its locks

	zc atomic.Pointer[zk.Conn] // conn, once zk.Connect has returned it

	mu        sync.Mutex
	state     State
	sessionID int64
	ready     chan struct{} // closed on the first session
	changed   chan struct{} // closed and replaced on every state change
	closed    bool
	holds     map[*Hold]struct{} // valid holds of this session's locks
	waiting   int                // acquisitions with a node queued
	lease     lease              // see lease.go

	notes   notifier // state changes for cfg.listener
	flight  inflight // the locks' requests in flight (send.go)
	dels    deletes  // released nodes not yet deleted (send.go)
	watches watches  // watch callbacks by path (state.go)

	auth    authGate     // see auth.go
	connGen atomic.Int64 // connections that reached a session, as onEvent saw them

	// Under NewSession: the timeout the server granted (ns), read from the
	// connection on each new session, and the channel the connection's
	// Close closes (see conninfo.go); connGone is set once it has.
	granted   atomic.Int64
	quit      <-chan struct{}
	connGone  atomic.Bool
	closeOnce sync.Once
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
	s := newSession(&wireTap{closing: make(chan struct{}), dial: cfg.dialer, log: cfg.logger.With("component", "zklock")}, true, cfg)
	conn, _, err := zk.Connect(servers, cfg.timeout,
		zk.WithDialer(s.tap.dialer()),
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
	case <-s.ready:
	case <-ctx.Done():
		s.Close()
		if dialErr := s.tap.lastDialErr(); dialErr != nil {
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
	s.quit = connQuit(conn)
	select {
	case <-s.quit:
		s.stop()
		return nil, fmt.Errorf("zklock: new session: %w", zk.ErrConnectionClosed)
	default:
	}
	s.start(conn)
	s.observe(conn.State())
	s.goBackground(func() { s.poll(events) })
	if len(cfg.digests) > 0 {
		s.goBackground(func() { _ = s.authenticate(s.ctx) })
	}
	return s, nil
}

func newSession(tap *wireTap, owns bool, cfg sessionConfig) *Session {
	s := &Session{
		tap: tap, ownsConn: owns, cfg: cfg,
		log:      cfg.logger.With("component", "zklock"),
		hardStop: make(chan struct{}),
		ready:    make(chan struct{}),
		changed:  make(chan struct{}),
		holds:    make(map[*Hold]struct{}),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.notes.init(cfg.listener)
	s.initDeletes()
	s.lease.init(s)
	s.auth.init(len(cfg.digests) > 0)
	return s
}

// start records conn and starts the session's goroutines.
func (s *Session) start(conn *zk.Conn) {
	s.conn = conn
	s.zc.Store(conn)
	if s.cfg.listener != nil {
		s.goBackground(s.notes.run)
	}
	s.goBackground(s.lease.renew)
}

// stop ends a session whose connection never came up.
func (s *Session) stop() {
	s.cancel()
	s.notes.close()
	s.bg.wait()
}

// State reports the session's current state.
func (s *Session) State() State {
	if s == nil {
		return StateClosed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// SessionID returns the id of the current ZooKeeper session (0 before the
// first one). It changes after an expiry.
func (s *Session) SessionID() int64 {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessionID
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
	return s.ctx.Done()
}

// timeout is the session timeout the loss bounds derive from: the one the
// server negotiated when known (from the connect response under Connect,
// from the connection under NewSession), else the one asked for; the
// smaller of the two, which only shortens the bounds.
func (s *Session) timeout() time.Duration {
	granted := time.Duration(s.granted.Load())
	if s.tap != nil {
		granted = time.Duration(s.tap.timeoutMs.Load()) * time.Millisecond
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
	if s.connGone.Load() {
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
	s.closeOnce.Do(s.close)
	return nil
}

func (s *Session) close() {
	s.closeState()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.lease.stop()
	s.stopFlush()
	s.notes.close()
	// Every goroutine of ours ends on s.ctx, on hardStop, or on a request
	// that completes (the closed connection fails it at once), except the
	// guaranteed deletes under NewSession, which end when their node or
	// session is gone.
	if s.tap != nil {
		s.tap.closeOnce.Do(func() { close(s.tap.closing) })
	}
	drained := make(chan struct{})
	go func() {
		s.bg.wait()
		close(drained)
	}()
	if s.ownsConn {
		// Let requests in flight finish before closing the connection:
		// go-zookeeper v1.0.4 can block its connection goroutine for ever
		// when a request queued as Close begins also fails its write (its
		// reply channel then gets one answer too many). Normally this takes
		// milliseconds; a connection that is down gets closeGrace.
		t := time.NewTimer(closeGrace)
		select {
		case <-drained:
		case <-t.C:
		}
		t.Stop()
		close(s.hardStop)
		s.conn.Close()
	}
	<-drained
}

// closeGrace bounds how long Close waits for requests in flight before it
// closes a connection of its own.
const closeGrace = time.Second

func (s *Session) isClosed() bool {
	select {
	case <-s.ctx.Done():
		return true
	default:
		return false
	}
}

func (s *Session) hardStopped() bool {
	select {
	case <-s.hardStop:
		return true
	default:
		return false
	}
}
