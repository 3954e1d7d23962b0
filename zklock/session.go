package zklock

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// State is what a Session knows about its ZooKeeper session.
type State int

// The states a Session moves through.
const (
	// StateConnecting: no session yet.
	StateConnecting State = iota
	// StateConnected: a live session; holds are valid.
	StateConnected
	// StateDisconnected: the connection dropped and the session may or may
	// not survive; a holder cannot know whether it still holds its locks.
	StateDisconnected
	// StateExpired: the server expired the session; its ephemeral nodes,
	// and so every hold, are gone. The client reconnects with a new session.
	StateExpired
	// StateClosed: Close was called or the connection was closed.
	StateClosed
)

// String names the state, as in logs.
func (s State) String() string {
	switch s {
	case StateConnecting:
		return "connecting"
	case StateConnected:
		return "connected"
	case StateDisconnected:
		return "disconnected"
	case StateExpired:
		return "expired"
	case StateClosed:
		return "closed"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

type sessionConfig struct {
	timeout      time.Duration
	logger       *slog.Logger
	expiryOnly   bool
	listener     func(State)
	maxRetryWait time.Duration
	noPipelining bool
	digests      []digestCred // see auth.go
	dialer       zk.Dialer    // nil: net.DialTimeout
}

// SessionOption configures Connect and NewSession.
type SessionOption func(*sessionConfig)

// WithSessionTimeout sets the session timeout asked of the server (default
// 10s; the server bounds it between 2 and 20 ticks unless configured
// otherwise). A crashed holder's lock passes on after about this long.
// Under NewSession, pass the timeout given to zk.Connect: the loss bounds
// are derived from it (see NewSession).
func WithSessionTimeout(d time.Duration) SessionOption {
	return func(c *sessionConfig) { c.timeout = d }
}

// WithLogger sends the session's and its locks' logs, and go-zookeeper's
// own, to l (default: slog.Default()).
func WithLogger(l *slog.Logger) SessionOption {
	return func(c *sessionConfig) { c.logger = l }
}

// WithLossOnExpiryOnly keeps holds through disconnections and through
// short failures to reach the ensemble's leader. A hold then ends when the
// session expires, when its node is deleted, or when no round trip through
// the leader has succeeded for three quarters of the session timeout (a
// local timer, as Curator's session connection-state policy has): the
// server may have expired the session by then. The price is a bounded
// overlap: another process may be granted the lock up to an eighth of the
// session timeout before this holder is told (the argument is in lease.go).
// Use it only together with fencing tokens. The default ends every hold on
// a disconnection, and when the leader has not been reached for a quarter
// of the session timeout, before any other process can be granted the lock.
func WithLossOnExpiryOnly() SessionOption {
	return func(c *sessionConfig) { c.expiryOnly = true }
}

// WithStateListener calls fn on every state change, in order, from a
// goroutine of the session's that does nothing else: a slow fn delays only
// later calls of fn, never the detection of a loss. fn should return
// promptly all the same.
func WithStateListener(fn func(State)) SessionOption {
	return func(c *sessionConfig) { c.listener = fn }
}

// WithoutPipelining makes every request of the session's locks wait for
// the one before it: an acquisition's listing waits for its create's reply,
// and a release's delete is not folded into the next create's multi (the
// next create on the path waits until the delete is done; Release itself
// still returns at once). It is the baseline the pipelined protocol is
// measured against, and a way out should a go-zookeeper upgrade break the
// assumption pipelining rests on (one request per socket write, see
// wire.go), which a contract test checks.
func WithoutPipelining() SessionOption {
	return func(c *sessionConfig) { c.noPipelining = true }
}

// WithDialer makes Connect open its connections with d (for TLS, a proxy,
// or a connection that counts what it carries) instead of
// net.DialTimeout. The session still observes the bytes it writes (see
// wire.go). It has no effect under NewSession, whose connection exists.
func WithDialer(d zk.Dialer) SessionOption {
	return func(c *sessionConfig) { c.dialer = d }
}

// WithMaxRetryInterval caps the exponential back-off between retries of
// ZooKeeper operations that failed on a connection loss (default 1s).
func WithMaxRetryInterval(d time.Duration) SessionOption {
	return func(c *sessionConfig) { c.maxRetryWait = d }
}

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

func buildConfig(opts []SessionOption) (sessionConfig, error) {
	cfg := sessionConfig{timeout: 10 * time.Second, maxRetryWait: time.Second}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.timeout <= 0 || cfg.maxRetryWait <= 0 {
		return cfg, fmt.Errorf("%w: session timeout and retry interval must be positive", ErrInvalidOption)
	}
	if err := checkDigests(cfg.digests); err != nil {
		return cfg, err
	}
	if cfg.logger == nil {
		cfg.logger = slog.Default()
	}
	return cfg, nil
}

// Connect dials the ZooKeeper servers (host:port) and waits until a session
// is established, and its credentials (WithDigestAuth) are accepted, or ctx
// ends.
func Connect(ctx context.Context, servers []string, opts ...SessionOption) (*Session, error) {
	if ctx == nil {
		return nil, ErrNilContext
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("%w: no servers", ErrInvalidOption)
	}
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	s := newSession(&wireTap{closing: make(chan struct{}), dial: cfg.dialer}, true, cfg)
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
		return nil, fmt.Errorf("zklock: connect to %v: %w", servers, ctx.Err())
	}
	if len(cfg.digests) > 0 {
		if err := s.authenticate(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// NewSession wraps a connection the caller already has; Close leaves conn
// open. Since the callback that go-zookeeper calls for every event can only
// be installed by zk.Connect, such a session learns its state by polling
// conn.State and conn.SessionID every few milliseconds, and by reading
// events, which may be nil (it then must not be read by anyone else: the
// session drains it). Two limits follow, so prefer Connect: requests are
// not pipelined (that needs the dialer Connect installs), and the session
// cannot learn the timeout the server negotiated, so the loss bounds are
// derived from WithSessionTimeout, which must not exceed the timeout the
// server grants. Credentials (WithDigestAuth) are sent in the background;
// the session's lock requests wait for them, and fail with their error.
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
	s.goBackground(s.flushDeletes)
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

// LeaseStats counts how the session's lease (see WithLossOnExpiryOnly)
// bore on its locks since the session was made.
type LeaseStats struct {
	// Waits counts grants that had to wait for the session to be
	// confirmed with the leader before they could be made.
	Waits int64
	// Lapses counts the times the lease ran out while holds existed,
	// ending them with ErrLeaseExpired.
	Lapses int64
}

// LeaseStats reports the session's lease counters.
func (s *Session) LeaseStats() LeaseStats {
	if s == nil {
		return LeaseStats{}
	}
	return LeaseStats{Waits: s.lease.waits.Load(), Lapses: s.lease.lapses.Load()}
}

// Done is closed when the session is closed.
func (s *Session) Done() <-chan struct{} {
	if s == nil {
		return closedChan
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

// goBackground runs fn on a goroutine the session tracks.
func (s *Session) goBackground(fn func()) {
	s.bg.add()
	go func() {
		defer s.bg.done()
		fn()
	}()
}

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

// zkLogger routes go-zookeeper's log lines to slog.
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	z.l.Debug(fmt.Sprintf(format, args...), "component", "go-zookeeper")
}
