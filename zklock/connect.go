package zklock

import (
	"context"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/zklock/internal/wire"
)

// Making and ending a session: Connect, NewSession, Close.

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
	s := newSession(wire.New(wire.Config{Dial: cfg.dialer, Log: cfg.logger.With("component", "zklock")}), true, cfg)
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
	s.st.holds = make(map[sessionHold]struct{})
	s.notes.init(cfg.listener)
	s.st.lease.init(s)
	s.auth.init(len(cfg.digests) > 0)
	return s
}

// start records conn and starts the session's goroutines.
func (s *Session) start(conn *zk.Conn) {
	trace.SessionOpened(conn, s.tap, s.cfg.expiryOnly) // before any step of conn: events are recorded once zc is set
	s.conn = conn
	s.writes = s.newWrites(conn)
	s.link.zc.Store(conn)
	if s.cfg.listener != nil {
		// Not one of the goroutines Close waits for: it runs user code,
		// which may be what calls Close (see Close).
		go s.notes.run()
	}
	s.goBackground(s.st.lease.renew)
}

// stop ends a session whose connection never came up.
func (s *Session) stop() {
	s.life.cancel()
	s.notes.close()
	s.life.bg.wait()
}

// Close ends the session: every hold on it ends (ErrSessionClosed), locks
// on it report ErrSessionClosed, and background work stops. A connection
// made by Connect is closed, and the server deletes the session's
// ephemeral nodes at once. Under NewSession the caller's connection stays
// open, so Close waits until the deletes of released nodes are done (or
// their session is over; see deleteGuaranteed): while the connection is
// up and the server refuses a delete for another reason than the node's
// absence (an ACL, say), that wait lasts until the session ends. Close
// waits for the session's own goroutines, never for the state listener
// (WithStateListener): a listener call in progress, which may be the one
// calling Close, can still be running when Close returns, and the
// listener is told StateClosed last, after it. Close is idempotent.
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
	s.writes.Stop()
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
