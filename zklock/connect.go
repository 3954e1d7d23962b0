package zklock

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/await"
	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/zklock/internal/wire"
)

// Making and ending a session: Connect, NewSession, Close.

// Connect dials the ZooKeeper servers and waits until a session is
// established, its credentials (WithDigestAuth) are accepted and its
// chroot is found, or ctx ends; when ctx has no deadline, for at most
// ConnectTimeout. Failing, it returns ctx's error with the last dial
// error, such as "connection refused".
//
// servers are read as the Java client, Curator's connectString and kazoo
// read theirs: each entry host:port (a missing port means 2181) or a
// comma-separated list of them, and the last may end with a chroot,
// "zk1:2181,zk2:2181/myapp" (or an entry may be the chroot alone,
// "/myapp", as kazoo's lists allow). With a chroot, every path the session
// names lives under it on the server, and every path it is told comes
// without it: the locks' and recipes' paths, and those of requests made
// through Session.Conn (runonce's roots, election, the inspector), which
// go through the same connection. The chroot node must exist: Connect
// checks it (one request) and fails with zk.ErrNoNode if it does not,
// since nothing could be locked under it, and creating it would make a
// mistyped chroot a new, empty tree in which this process locks alone.
// An empty address is refused with ErrEmptyServerAddress, a chroot that
// is not a valid path below the root with ErrInvalidChroot.
//
// The connection is TLS with WithTLS, and authenticated by digest
// credentials (WithDigestAuth) or, over TLS, by a client certificate (an
// x509 identity); go-zookeeper has no SASL, so no Kerberos (see WithTLS).
func Connect(ctx context.Context, servers []string, opts ...SessionOption) (*Session, error) {
	if ctx == nil {
		return nil, ErrNilContext
	}
	servers, chroot, err := parseServers(servers)
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
	// The tap tells the session of each dial (its outage's lines): s is
	// set before zk.Connect starts the goroutine that dials.
	var s *Session
	tap := wire.New(wire.Config{Dial: cfg.dialer, TLS: cfg.tls, Chroot: chroot,
		OnDial: func(address string, err error) { s.dialed(address, err) }})
	s = newSession(tap, true, cfg)
	conn, _, err := zk.Connect(servers, cfg.timeout,
		zk.WithDialer(tap.Dialer()),
		zk.WithHostProvider(tap.HostProvider()),
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
	if err := s.established(ctx, servers); err != nil {
		s.Close()
		return nil, err
	}
	if len(cfg.digests) > 0 {
		if err := s.authenticate(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	if chroot != "" {
		if err := s.findChroot(ctx, chroot); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// established waits for the session, or for ctx to end, or for every
// server to refuse TLS (see WithTLS).
func (s *Session) established(ctx context.Context, servers []string) error {
	select {
	case <-s.st.ready:
		return nil
	case <-s.tap.Refused():
		return fmt.Errorf("zklock: connect to %v: no session: every server refused TLS: %w", servers, s.tap.RefusedErr())
	case <-ctx.Done():
	}
	if dialErr := s.tap.LastDialErr(); dialErr != nil {
		return fmt.Errorf("zklock: connect to %v: no session: %w (last dial error: %w)", servers, ctx.Err(), dialErr)
	}
	return fmt.Errorf("zklock: connect to %v: no session: %w", servers, ctx.Err())
}

// findChroot checks that the chroot exists: its "/".
func (s *Session) findChroot(ctx context.Context, chroot string) error {
	var ok bool
	err := s.retry(ctx, func() (err error) {
		ok, err = await.Call(ctx, func() (bool, error) {
			ok, _, err := s.conn.Exists("/")
			return ok, err
		})
		return err
	})
	switch {
	case err != nil:
		return fmt.Errorf("zklock: connect: looking for the chroot %s: %w", chroot, err)
	case !ok:
		return fmt.Errorf("zklock: connect: the chroot %s does not exist: create it first (zkCli.sh create %s), as the Java client and kazoo need: %w", chroot, chroot, zk.ErrNoNode)
	}
	return nil
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
// with their error. There is no chroot under NewSession: a connection
// whose server address carries one ("zk1:2181/myapp", which zk.Connect
// dials as the port "2181/myapp") is refused with ErrInvalidChroot, and
// so is WithTLS, since the connection exists.
func NewSession(conn *zk.Conn, events <-chan zk.Event, opts ...SessionOption) (*Session, error) {
	if conn == nil {
		return nil, fmt.Errorf("%w: a connection is required", ErrNilSession)
	}
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	if cfg.tls != nil {
		return nil, fmt.Errorf("%w: WithTLS under NewSession: the connection exists (dial it with TLS: zk.WithDialer)", ErrInvalidOption)
	}
	if root := dialedChroot(conn); root != "" {
		return nil, fmt.Errorf("%w: NewSession on a connection to %q: go-zookeeper takes no chroot (it dials the port after the colon, chroot included, and never connects): use Connect, which takes %s", ErrInvalidChroot, conn.Server(), root)
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

// dialedChroot returns the chroot in the address conn dials, if any.
// go-zookeeper picks its first server a moment after zk.Connect returns:
// NewSession waits for it, briefly.
func dialedChroot(conn *zk.Conn) string {
	for deadline := time.Now().Add(100 * time.Millisecond); conn.Server() == "" && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if _, root, ok := strings.Cut(conn.Server(), "/"); ok {
		return "/" + root
	}
	return ""
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
