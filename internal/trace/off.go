//go:build !tierlocktrace

package trace

import (
	"time"

	"github.com/go-zookeeper/zk"
)

// Enabled reports whether the build records (the tierlocktrace tag): false,
// and every record function below is empty, inlined to nothing.
const Enabled = false

// Start does nothing without the tierlocktrace tag: it returns nil, nil.
func Start(dir string) (*Recorder, error) { return nil, nil }

// Stop does nothing without the tierlocktrace tag.
func Stop() error { return nil }

// GateEntered records a goroutine past the gate of the lock on path.
func GateEntered(c *zk.Conn, path string, wait bool) {}

// HandoffRide records the gate's new holder riding node, handed over.
func HandoffRide(c *zk.Conn, path, node string) {}

// GatePassed records the gate and node passed to a local waiter, once
// passed (the receiver may have recorded any of its steps first).
func GatePassed(c *zk.Conn, path string) {}

// GateLeft records the gate given back.
func GateLeft(c *zk.Conn, path string) {}

// Sent records a request handed to the connection.
func Sent(c *zk.Conn, op Op, path string) {}

// Answered records a request's answer: node is the node it made or
// concerns.
func Answered(c *zk.Conn, op Op, path, node string, err error) {}

// Listed records a listing's answer.
func Listed(c *zk.Conn, op Op, path string, children []string, st *zk.Stat, err error) {}

// Watched records a getData-with-watch's answer on node.
func Watched(c *zk.Conn, node string, st *zk.Stat, err error) {}

// RetrySent records a guaranteed delete's attempt sent (bgdel's retry).
func RetrySent(c *zk.Conn, node string) {}

// RetryAnswered records a guaranteed delete's attempt answered.
func RetryAnswered(c *zk.Conn, node string, err error) {}

// Turned records the waiter's reading of a listing: our node at index
// (-1: gone), leading or not.
func Turned(c *zk.Conn, node string, index int, leads bool, pzxid int64) {}

// Evented records an event from go-zookeeper.
func Evented(c *zk.Conn, ev zk.Event) {}

// Renewed records the lease's deadline of session sid moved to until,
// counted from a touch written at touched.
func Renewed(c *zk.Conn, sid int64, touched, until time.Time) {}

// Lapsed records the lease's lapse, ending holds holds.
func Lapsed(c *zk.Conn, holds int) {}

// Judged records the session's verdict on a grant of a node of owner.
func Judged(c *zk.Conn, owner int64, verdict int) {}

// Granted records the outcome of an acquisition's grant: node granted
// with token, or err.
func Granted(c *zk.Conn, path, node string, owner, token int64, err error) {}

// Lost records a hold's loss told, with its cause.
func Lost(c *zk.Conn, node string, cause error) {}

// Released records a hold released.
func Released(c *zk.Conn, path, node string) {}

// DelAdded records the delete of node queued for the session's writer.
func DelAdded(c *zk.Conn, path, node string, owner int64) {}

// SessionOpened records a session made on c, with its loss policy and
// the servers' declared tickTime; wire is the wire c was dialed through,
// or nil.
func SessionOpened(c *zk.Conn, wire any, expiryOnly bool, tick time.Duration) {}

// Wrote records a write to the connection of wire, begun at start, of a
// request whose waiter has key (its own write's date: "" none).
func Wrote(wire any, op int32, start time.Time, key string) {}

// Handshook records the server's connect response, read on wire, to the
// connect request written at written.
func Handshook(wire any, sid int64, timeoutMs int32, written time.Time) {}

// Touched records a touch the tap of wire confirmed.
func Touched(wire any, written, confirmed time.Time) {}

// TickProbed records a probe's connect answer: the least session timeout
// the server grants.
func TickProbed(c *zk.Conn, least time.Duration) {}

// ConnHandshook records the session and timeout the server granted, as
// go-zookeeper read them.
func ConnHandshook(c *zk.Conn, sid int64, d time.Duration) {}

// Paused records that this process stopped process pid from from to to.
func Paused(pid int, from, to time.Time) {}

// WritesSent does nothing without the tierlocktrace tag.
func WritesSent(c *zk.Conn, n int, writeOf func(i int) (txn bool, ops []any)) {}

// WritesAnswered does nothing without the tierlocktrace tag.
func WritesAnswered(c *zk.Conn, n int, writeOf func(i int) (txn bool, ops []any), res []zk.MultiResponse, err error) {
}
