package zklock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
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
	timeout        time.Duration
	logger         *slog.Logger
	expiryOnly     bool
	listener       func(State)
	maxRetryWait   time.Duration
	connectTimeout time.Duration
}

// SessionOption configures Connect and NewSession.
type SessionOption func(*sessionConfig)

// WithSessionTimeout sets the session timeout asked of the server (default
// 10s; the server bounds it between 2 and 20 ticks unless configured
// otherwise). A crashed holder's lock passes on after about this long.
func WithSessionTimeout(d time.Duration) SessionOption {
	return func(c *sessionConfig) { c.timeout = d }
}

// WithLogger sends the session's and its locks' logs, and go-zookeeper's
// own, to l (default: slog.Default()).
func WithLogger(l *slog.Logger) SessionOption {
	return func(c *sessionConfig) { c.logger = l }
}

// WithLossOnExpiryOnly keeps holds through disconnections and reports loss
// only when the session expires (or the node is deleted). This trades
// safety for availability: while disconnected the server may already have
// expired the session and granted the lock to another process, and the
// holder learns of it only when it reconnects. Use it only together with
// fencing tokens. The default ends every hold on a disconnection.
func WithLossOnExpiryOnly() SessionOption {
	return func(c *sessionConfig) { c.expiryOnly = true }
}

// WithStateListener calls fn, from the session's event goroutine, on every
// state change. fn must not block.
func WithStateListener(fn func(State)) SessionOption {
	return func(c *sessionConfig) { c.listener = fn }
}

// WithMaxRetryInterval caps the exponential back-off between retries of
// ZooKeeper operations that failed on a connection loss (default 1s).
func WithMaxRetryInterval(d time.Duration) SessionOption {
	return func(c *sessionConfig) { c.maxRetryWait = d }
}

// Session is one client's connection to ZooKeeper, shared by all its locks,
// like etcd's concurrency.Session. It owns the single reader of the
// connection's event channel and tells every lock on it when the
// connection drops, the session expires, or a session is established again.
// A Session outlives an expiry: go-zookeeper reconnects with a new session
// and the session's locks work again.
type Session struct {
	conn     *zk.Conn
	tap      *wireTap // nil when the connection is the caller's: no pipelining
	ownsConn bool
	cfg      sessionConfig
	log      *slog.Logger

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	bg     sync.WaitGroup // event loop, watchers, guaranteed deletes

	mu        sync.Mutex
	state     State
	sessionID int64
	ready     chan struct{} // closed on the first session
	listeners map[int]func(State)
	nextID    int
	closed    bool

	pendMu  sync.Mutex
	pending map[string]*pendingDelete // by lock path
}

// pendingDelete is the node of a release whose delete is not on the wire
// yet (sent == nil), or is being sent (sent closes once it is).
type pendingDelete struct {
	node string
	sent chan struct{}
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
	if cfg.logger == nil {
		cfg.logger = slog.Default()
	}
	return cfg, nil
}

// Connect dials the ZooKeeper servers (host:port) and waits until a session
// is established or ctx ends.
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
	tap := &wireTap{}
	conn, events, err := zk.Connect(servers, cfg.timeout,
		zk.WithDialer(tap.dialer()),
		zk.WithLogger(zkLogger{cfg.logger}),
		zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("zklock: connect: %w", err)
	}
	s := newSession(conn, events, tap, true, cfg)
	select {
	case <-s.ready:
		return s, nil
	case <-ctx.Done():
		s.Close()
		return nil, fmt.Errorf("zklock: connect to %v: %w", servers, ctx.Err())
	}
}

// NewSession wraps a connection the caller already has. The session becomes
// the only reader of events, the channel zk.Connect returned with conn; Close
// leaves conn open. Requests on such a session are not pipelined (that needs
// the dialer Connect installs), so each acquisition waits for its create.
func NewSession(conn *zk.Conn, events <-chan zk.Event, opts ...SessionOption) (*Session, error) {
	if conn == nil || events == nil {
		return nil, fmt.Errorf("%w: connection and its event channel are required", ErrNilSession)
	}
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	s := newSession(conn, events, nil, false, cfg)
	if conn.State() == zk.StateHasSession {
		s.setState(StateConnected)
	}
	return s, nil
}

func newSession(conn *zk.Conn, events <-chan zk.Event, tap *wireTap, owns bool, cfg sessionConfig) *Session {
	s := &Session{
		conn: conn, tap: tap, ownsConn: owns, cfg: cfg,
		log:       cfg.logger.With("component", "zklock"),
		ready:     make(chan struct{}),
		listeners: make(map[int]func(State)),
		pending:   make(map[string]*pendingDelete),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.bg.Add(1)
	go s.readEvents(events)
	return s
}

func (s *Session) readEvents(events <-chan zk.Event) {
	defer s.bg.Done()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				s.setState(StateClosed)
				s.cancel()
				return
			}
			if ev.Type != zk.EventSession {
				continue
			}
			switch ev.State {
			case zk.StateHasSession:
				s.setState(StateConnected)
			case zk.StateDisconnected:
				s.setState(StateDisconnected)
			case zk.StateExpired:
				s.setState(StateExpired)
			}
		case <-s.ctx.Done():
			return
		}
	}
}

func (s *Session) setState(st State) {
	s.mu.Lock()
	prev := s.state
	if prev == StateClosed || (prev == st && st != StateConnected) {
		s.mu.Unlock()
		return
	}
	// A disconnection matters only to a live session; after an expiry the
	// next interesting event is the new session.
	if st == StateDisconnected && prev != StateConnected {
		s.mu.Unlock()
		return
	}
	id := s.conn.SessionID()
	if st == StateConnected && prev == StateConnected && id == s.sessionID {
		s.mu.Unlock()
		return
	}
	s.state = st
	if st == StateConnected {
		s.sessionID = id
		select {
		case <-s.ready:
		default:
			close(s.ready)
		}
	}
	fns := make([]func(State), 0, len(s.listeners)+1)
	for _, fn := range s.listeners {
		fns = append(fns, fn)
	}
	s.mu.Unlock()

	s.log.Info("zookeeper session state", "state", st, "session", fmt.Sprintf("0x%x", id))
	if s.cfg.listener != nil {
		fns = append(fns, s.cfg.listener)
	}
	for _, fn := range fns {
		fn(st)
	}
}

// subscribe registers fn for state changes and returns the function that
// removes it.
func (s *Session) subscribe(fn func(State)) (unsubscribe func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextID
	s.nextID++
	s.listeners[id] = fn
	return func() {
		s.mu.Lock()
		delete(s.listeners, id)
		s.mu.Unlock()
	}
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
func (s *Session) Conn() *zk.Conn { return s.conn }

// Done is closed when the session is closed (by Close, or by its owner
// closing the wrapped connection).
func (s *Session) Done() <-chan struct{} { return s.ctx.Done() }

// Close ends the session: locks on it report ErrSessionClosed, a
// connection made by Connect is closed (the server then deletes the
// session's ephemeral nodes at once), and background work stops. Close is
// idempotent.
func (s *Session) Close() error {
	if s == nil {
		return ErrNilSession
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.setState(StateClosed)
	s.cancel()
	if s.ownsConn {
		s.conn.Close()
		// Every goroutine of ours is blocked at most on a request the closed
		// connection fails, or on s.ctx: wait for them.
		s.bg.Wait()
	}
	return nil
}

func (s *Session) isClosed() bool {
	select {
	case <-s.ctx.Done():
		return true
	default:
		return false
	}
}

// goBackground runs fn on a goroutine the session tracks.
func (s *Session) goBackground(fn func()) {
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		fn()
	}()
}

// transient reports errors worth retrying: the request may not have reached
// the server, or a new session is coming.
func transient(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrSessionExpired) ||
		errors.Is(err, zk.ErrSessionMoved) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, errParentsMade)
}

// retry runs op until it succeeds, fails with a non-transient error, ctx
// ends or the session closes, backing off exponentially between attempts.
func (s *Session) retry(ctx context.Context, op func() error) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	unlink := context.AfterFunc(s.ctx, stop)
	defer unlink()
	b := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(10*time.Millisecond),
		backoff.WithMaxInterval(s.cfg.maxRetryWait),
		backoff.WithMaxElapsedTime(0))
	err := backoff.Retry(func() error {
		err := op()
		if err != nil && !transient(err) {
			return backoff.Permanent(err)
		}
		return err
	}, backoff.WithContext(b, ctx))
	if err != nil && s.isClosed() {
		return fmt.Errorf("%w: %w", ErrSessionClosed, err)
	}
	return err
}

// deleteInBackground deletes node, retrying through connection losses
// until it is gone or the session ends (Curator's guaranteed delete).
func (s *Session) deleteInBackground(node string) {
	s.goBackground(func() { s.deleteNow(node) })
}

func (s *Session) deleteNow(node string) {
	err := s.retry(s.ctx, func() error {
		err := s.conn.Delete(node, -1)
		if err == nil || errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	})
	if err != nil && !s.isClosed() {
		s.log.Warn("lock node not deleted", "node", node, "err", err)
	}
}

// send runs op (one request) on its own goroutine and returns once the
// request with one of opcodes carrying key is on the wire, once op has returned, or once ctx
// ends; the returned channel closes when op returns. Without a wire tap it
// waits for op to return (or ctx to end).
func (s *Session) send(ctx context.Context, key string, opcodes []int32, op func()) <-chan struct{} {
	fin := make(chan struct{})
	var sent <-chan struct{}
	if s.tap != nil {
		w := s.tap.expect(key, opcodes...)
		defer s.tap.forget(w)
		sent = w.sent
	}
	s.goBackground(func() {
		defer close(fin)
		op()
	})
	select {
	case <-sent:
	case <-fin:
	case <-ctx.Done():
	}
	return fin
}

// zkLogger routes go-zookeeper's log lines to slog.
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	z.l.Debug(fmt.Sprintf(format, args...), "component", "go-zookeeper")
}

// queueDelete schedules the delete of a released or abandoned node of the
// lock at path. The delete is handed to a new goroutine, which the runtime
// runs after this one yields: an acquisition of the same path on this
// session that comes first (the same goroutine acquiring again, or the
// next local holder) takes it into its own create's multi transaction,
// saving a log write on the server. Other processes wait at most a
// scheduling delay longer for it. Pending deletes are kept per session and
// path, not per Lock, so that a new Lock on the path sees them too.
func (s *Session) queueDelete(path, node string) {
	p := &pendingDelete{node: node}
	s.pendMu.Lock()
	if old := s.pending[path]; old != nil && old.sent == nil {
		s.deleteInBackground(old.node)
	}
	s.pending[path] = p
	s.pendMu.Unlock()
	s.goBackground(func() { s.flushPending(path, p) })
}

// flushPending sends p's delete unless an acquisition took it.
func (s *Session) flushPending(path string, p *pendingDelete) {
	s.pendMu.Lock()
	if s.pending[path] != p || p.sent != nil {
		s.pendMu.Unlock()
		return
	}
	sent := make(chan struct{})
	p.sent = sent
	s.pendMu.Unlock()
	s.send(s.ctx, p.node, []int32{opDelete}, func() { s.deleteNow(p.node) })
	s.pendMu.Lock()
	if s.pending[path] == p {
		delete(s.pending, path)
	}
	s.pendMu.Unlock()
	close(sent)
}

// takePending returns the node whose delete an acquisition on path must
// send in its create's transaction, or a channel to wait on while such a
// delete is being written, so that the create queues behind it and the
// session never has two nodes in the queue.
func (s *Session) takePending(path string) (node string, inFlight <-chan struct{}) {
	s.pendMu.Lock()
	defer s.pendMu.Unlock()
	p := s.pending[path]
	switch {
	case p == nil:
		return "", nil
	case p.sent != nil:
		return "", p.sent
	}
	delete(s.pending, path)
	return p.node, nil
}
