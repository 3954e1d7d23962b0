package session

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/await"
	"github.com/tierlock/tierlock/internal/mono"
	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/zklock/internal/wire"
)

// Making and ending a floor: Dial (zklock.Connect), Wrap
// (zklock.NewSession), Close.

// Dial connects to servers (host:port, checked) with chroot ("" for none)
// and waits until a session is established, its credentials accepted and
// its chroot found, or ctx ends (zklock.Connect bounds a ctx without a
// deadline).
func Dial(ctx context.Context, servers []string, chroot string, cfg Config) (*Floor, error) {
	s, tap := tappedFloor(chroot, true, cfg)
	conn, _, err := zk.Connect(servers, cfg.Timeout,
		zk.WithDialer(tap.Dialer()),
		zk.WithHostProvider(tap.HostProvider()),
		zk.WithEventCallback(s.st.onEvent),
		zk.WithLogger(zkLogger{cfg.Logger}),
		zk.WithLogInfo(false))
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("zklock: connect: %w", err)
	}
	s.start(conn, conn)
	// Events that came before conn was known were ignored: catch up.
	s.st.catchUp()
	if err := s.established(ctx, servers); err != nil {
		s.Close()
		return nil, err
	}
	if len(cfg.Digests) > 0 {
		if err := s.authenticate(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	if chroot != "" {
		if err := s.findChroot(ctx, servers, chroot); err != nil {
			s.Close()
			return nil, err
		}
	}
	s.lister.probe(ctx)
	return s, nil
}

// established waits for the session, or for ctx to end, or for every
// server to refuse this side (TLS refused, or TLS spoken to a plain
// client: see wire's refusals), which fails with zk.ErrNoServer and the
// last refusal.
func (s *Floor) established(ctx context.Context, servers []string) error {
	select {
	case <-s.st.ready:
		return nil
	case <-s.tap.Refused():
		what := "every server refused TLS"
		if s.cfg.TLS == nil {
			what = "every server speaks TLS only"
		}
		return fmt.Errorf("zklock: connect to %v: no session: %s: %w: %w", servers, what, zk.ErrNoServer, s.tap.RefusedErr())
	case <-ctx.Done():
	}
	if dialErr := s.tap.LastDialErr(); dialErr != nil {
		hint := ""
		if op := (*net.OpError)(nil); errors.As(dialErr, &op) && op.Op == "dial" {
			hint = "; is ZooKeeper running there?" // nothing answered
		}
		return fmt.Errorf("zklock: connect to %v: no session: %w (last dial error: %w%s)", servers, ctx.Err(), dialErr, hint)
	}
	return fmt.Errorf("zklock: connect to %v: no session: %w", servers, ctx.Err())
}

// findChroot checks that the chroot exists: its "/". Missing, the error
// says how to create it, on servers.
func (s *Floor) findChroot(ctx context.Context, servers []string, chroot string) error {
	var ok bool
	err := s.Retry(ctx, func() (err error) {
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
		return fmt.Errorf("zklock: connect: the chroot %s does not exist: create it first, as the Java client and kazoo need (tierlock create -zk %s%s, or ZooKeeper's zkCli.sh create %s): %w", chroot, strings.Join(servers, ","), chroot, chroot, zk.ErrNoNode)
	}
	return nil
}

// Wrap makes a floor over conn, a connection its caller made and keeps
// (zklock.NewSession): Close leaves it open. Its state is polled, and
// events read (events may be nil), since the event callback can only be
// installed by zk.Connect; nothing is pipelined.
func Wrap(conn *zk.Conn, events <-chan zk.Event, cfg Config) (*Floor, error) {
	s := newFloor(nil, false, cfg)
	s.life.unwatch = mono.Watch()
	s.link.quit = ConnQuit(conn)
	select {
	case <-s.link.quit:
		s.stop()
		return nil, fmt.Errorf("zklock: new session: %w", zk.ErrConnectionClosed)
	default:
	}
	s.start(conn, conn)
	s.st.catchUp()
	s.Go(func() { s.st.poll(events) })
	if len(cfg.Digests) > 0 {
		s.Go(func() { _ = s.authenticate(s.life.ctx) })
	}
	return s, nil
}

// tappedFloor makes a floor that dials through a tap of its own (Dial,
// DialConn), owning the connection or not. The tap tells the floor of each
// dial (its outage's lines): s is set before zk.Connect starts the
// goroutine that dials.
func tappedFloor(chroot string, owns bool, cfg Config) (s *Floor, tap *wire.Tap) {
	tap = wire.New(wire.Config{Dial: cfg.Dialer, TLS: cfg.TLS, Chroot: chroot,
		OnDial: func(address string, err error) { s.out.dialed(address, err) }})
	s = newFloor(tap, owns, cfg)
	s.life.unwatch = mono.Watch()
	return s, tap
}

func newFloor(tap *wire.Tap, owns bool, cfg Config) *Floor {
	s := &Floor{tap: tap, cfg: cfg, log: cfg.Logger.With("component", "zklock")}
	s.link.ownsConn = owns
	s.life.hardStop = make(chan struct{})
	s.life.ctx, s.life.cancel = context.WithCancel(context.Background())
	s.openAuth() // before anything can wait at the gate
	s.st.init(s)
	s.lease.init(s)
	s.flight.init(s.life.ctx.Done(), &s.auth, s.Go, tap, func() time.Duration { return s.lease.Timeout() / 32 })
	s.lister.f = s
	s.watches.dispatching = tap != nil
	s.out.log, s.out.expiryOnly = s.log, cfg.ExpiryOnly
	if tap != nil {
		s.out.unanswered = tap.Unanswered
	}
	s.notes.init(cfg.Listener)
	return s
}

// start records the connection (zc: the same as go-zookeeper's type, nil
// under an explorer's double) and starts the floor's goroutines.
func (s *Floor) start(conn Conn, zc *zk.Conn) {
	trace.SessionOpened(zc, s.tap, s.cfg.ExpiryOnly, s.cfg.ServerTick) // before any step of zc: events are recorded once zc is set
	s.conn, s.zc = conn, zc
	s.startWrites()
	s.link.zc.Store(zc)
	s.link.conn.Store(&conn)
	if s.cfg.Listener != nil {
		// Not one of the goroutines Close waits for: it runs user code,
		// which may be what calls Close (see Close).
		go s.notes.run()
	}
	s.showInside()
	s.Go(s.lease.renew)
	s.Go(func() { s.probe(zc) })
}

// showInside fills in what a test may reach below the floor's verbs, when
// its Hooks ask (Hooks.Inside).
func (s *Floor) showInside() {
	h := s.cfg.Hooks
	if h == nil || h.Inside == nil {
		return
	}
	lastK := func() time.Time {
		if k := s.lease.lastK.Load(); k != 0 {
			return mono.Time(k).Std()
		}
		return time.Time{}
	}
	listings := func() int {
		s.lister.mu.Lock()
		defer s.lister.mu.Unlock()
		return len(s.lister.waiting)
	}
	*h.Inside = Inside{Tap: s.tap, Refresh: s.lease.refresh, LastK: lastK, Listings: listings}
}

// stop ends a floor whose connection never came up.
func (s *Floor) stop() {
	s.life.cancel()
	s.notes.close()
	s.life.bg.wait()
	s.endWatch()
}

// endWatch undoes the floor's mono.Watch, if it made one.
func (s *Floor) endWatch() {
	if s.life.unwatch != nil {
		s.life.unwatch()
	}
}

// Close ends the floor: every hold on it ends (ErrClosed), the locks'
// waits on it end, and background work stops. A connection of its own
// (Dial) is closed, and the server deletes the session's ephemeral nodes
// at once. Under Wrap the caller's connection stays open, so Close waits
// until the deletes of released nodes are done (or their session is over;
// see DeleteGuaranteed). Close waits for the floor's own goroutines, never
// for the state listener. Close is idempotent; concurrent calls wait for
// the first to finish.
func (s *Floor) Close() { s.life.closeOnce.Do(s.close) }

func (s *Floor) close() {
	s.st.closeState()
	s.st.mu.Lock()
	s.st.closed = true
	s.st.mu.Unlock()
	s.life.cancel()
	s.lease.stop()
	s.wq.Stop()
	s.notes.close()
	// Every goroutine of ours ends on s.life.ctx, on hardStop, or on a request
	// that completes (the closed connection fails it at once), except the
	// guaranteed deletes under Wrap, which end when their node or session
	// is gone.
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
	s.endWatch()
}
