package zkcompat

import (
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock"
)

// Connect is zk.Connect for the drop-in's connections: the same
// arguments, the same results, and it returns as zk.Connect does, at once,
// go-zookeeper connecting in the background. A migrant changes
//
//	conn, events, err := zk.Connect(servers, 10*time.Second)      // before
//	conn, events, err := zkcompat.Connect(servers, 10*time.Second) // after
//
// and uses conn as before: it is a *zk.Conn, every request of the
// caller's goes through it, and the caller's Close ends it. What it buys:
// the drop-in's session is made with the connection, dialed through its
// own tap (zklock.Dial), so it sees the connection's handshake: the first
// Lock on the connection is granted on its create's answer, as zk.Lock's
// is, where on a connection of zk.Connect's the session must first prove
// its lease across 5/8 of the servers' tick (1.25 s at ZooKeeper's default
// tickTime of 2 s); and its requests are pipelined. go-zookeeper's options
// apply as they would (zk.WithLogger, zk.WithMaxBufferSize, ...), except
// zk.WithDialer, zk.WithHostProvider and zk.WithEventCallback, which are
// the session's own. Credentials: the connection's AddAuth, as before.
// CloseConn ends the session and leaves conn open; a later NewLock on it
// then makes a session as it would on zk.Connect's.
func Connect(servers []string, sessionTimeout time.Duration, options ...func(*zk.Conn)) (*zk.Conn, <-chan zk.Event, error) {
	opts := append(sessionOptions(), zklock.WithSessionTimeout(sessionTimeout))
	s, events, err := zklock.Dial(servers, options, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("zkcompat: %w", err)
	}
	conn := s.Conn()
	registry.mu.Lock()
	registry.conns[conn] = adopt(conn, s)
	registry.mu.Unlock()
	return conn, events, nil
}
