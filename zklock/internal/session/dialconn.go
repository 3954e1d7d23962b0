package session

import (
	"fmt"

	"github.com/go-zookeeper/zk"
)

// DialConn makes a floor over a connection it dials through the tap, and
// hands the connection to the caller as zk.Connect would: it returns at
// once (go-zookeeper connects in the background, and requests made
// meanwhile wait for the session or fail with zk.ErrNoServer, as
// zk.Connect's do), with go-zookeeper's event channel, which the floor
// does not read. What it buys over Wrap, for a caller who keeps the
// connection (zkcompat.Connect): the lease sees the handshake, so the
// first grant on the connection waits for no chain across the tick, and
// the locks' requests are pipelined and batched. The connection is the
// caller's, as under Wrap: Close leaves it open, and the caller's Close of
// it ends the floor (ErrConnClosed). zkOpts are the caller's go-zookeeper
// options, applied before the floor's own dialer, host provider and event
// callback, which they cannot replace. No credentials of the floor's
// (cfg.Digests are not sent: the caller adds its own with the
// connection's AddAuth, which the tap's order sees), no chroot check.
func DialConn(servers []string, chroot string, cfg Config, zkOpts []func(*zk.Conn)) (*Floor, <-chan zk.Event, error) {
	s, tap := tappedFloor(chroot, false, cfg)
	// go-zookeeper's option type is unexported: the caller's go as one
	// function, between the floor's defaults and what the floor must own.
	callers := func(c *zk.Conn) {
		for _, o := range zkOpts {
			o(c)
		}
	}
	conn, events, err := zk.Connect(servers, cfg.Timeout, zk.WithLogger(zkLogger{cfg.Logger}), zk.WithLogInfo(false), callers,
		zk.WithDialer(tap.Dialer()), zk.WithHostProvider(tap.HostProvider()), zk.WithEventCallback(s.st.onEvent))
	if err != nil {
		s.stop()
		return nil, nil, fmt.Errorf("zklock: connect: %w", err)
	}
	s.link.quit = ConnQuit(conn)
	s.start(conn, conn)
	s.st.catchUp()
	s.Go(func() {
		select {
		case <-s.link.quit:
			s.st.connClosed()
		case <-s.life.ctx.Done():
		}
	})
	s.Go(func() {
		if s.awaitConnected() {
			s.lister.probe(s.life.ctx)
		}
	})
	return s, events, nil
}
