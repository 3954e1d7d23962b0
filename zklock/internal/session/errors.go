package session

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// The floor's errors, each defined once: package zklock re-exports the
// sentinels under its own names (ErrSessionClosed for ErrClosed), as the
// same values, and the write path tells its writes' ends in them
// (writes.Conn.Closed, GoneWithSession).
var (
	// ErrClosed reports use of a session (or a lock on it) after Close.
	ErrClosed = errors.New("zklock: session closed")
	// ErrDisconnected is the cause of a loss on a disconnection under the
	// default policy.
	ErrDisconnected = errors.New("zklock: connection to ZooKeeper lost")
	// ErrSessionExpired is the cause of a loss on session expiry.
	ErrSessionExpired = errors.New("zklock: ZooKeeper session expired")
	// ErrLeaseExpired is the cause of a loss when the session could not be
	// confirmed with the ensemble's leader in time (lease.go).
	ErrLeaseExpired = errors.New("zklock: session not confirmed with the leader in time")
	// ErrConnClosed is the error of requests on a floor whose connection
	// its owner closed (Wrap).
	ErrConnClosed = fmt.Errorf("%w: %w", ErrClosed, zk.ErrConnectionClosed)
	// ErrGoneWithSession is what a delete's handler is told when the node
	// went with its session: dropped unsent, its session over, or refused
	// for the node's absence once the session is another.
	ErrGoneWithSession = fmt.Errorf("zklock: the node's session is over: %w: %w", ErrSessionExpired, zk.ErrNoNode)
)
