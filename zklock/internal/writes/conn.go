package writes

import (
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
)

// Conn is what the session gives its write path: the connection, as far
// as the writer needs it, and the session's bookkeeping around a write.
// Every field must be set. The queue calls none with its lock held but
// Now and AfterFunc, which must not call back into it; Connected and Send
// are called by the writer's goroutine, and may wait.
type Conn struct {
	// Connected waits until the session has a connection with a session
	// (true), or is closed (false). A request handed to the client while
	// the connection is down goes out on the next one, perhaps in another
	// session: the writer waits instead.
	Connected func() bool
	// SessionID is the id of the connection's current session, 0 when
	// none.
	SessionID func() int64
	// Send makes each request and returns their answers, in the order of
	// reqs. Requests may be made side by side, each written whole; Send
	// calls Request.Written once it sees a request written (a session that
	// cannot see its writes never does: Write.Sent then closes with the
	// answer).
	Send func(reqs []*Request) []Answer
	// Ended gives back the place in the session's bound on requests in
	// flight that a create held: when sent, its request was answered after
	// rtt; else it never left.
	Ended func(sent bool, rtt time.Duration)
	// DeleteApart hands over the delete of node, made in session owner, to
	// be retried alone until the node or its session is gone: the server
	// refused it for another reason than the node's absence (an ACL), or
	// the session closed with it queued (Config.KeepDeletesOnClose).
	DeleteApart func(node string, owner int64)
	// Queued tells that the delete of node, made in session owner, on the
	// lock at path, was queued (a trace point).
	Queued func(path, node string, owner int64)
	// Go runs fn on a goroutine the session tracks.
	Go func(fn func())
	// Now and AfterFunc are the writer's clock: the time a lone delete
	// lingers (Config.FoldWait), and the round trips it reports to Ended.
	Now       func() time.Time
	AfterFunc func(d time.Duration, f func()) Timer
	// Closed is why the session is closed, once it is: the Err of its
	// writes that end Closed, and what its queued deletes are told.
	Closed func() error
	// GoneWithSession is what a delete is told when its node went with
	// its session (it wraps zk.ErrNoNode): dropped unsent, the session
	// over, or refused for the node's absence once the session is another.
	GoneWithSession error
}

// Timer is what AfterFunc returns, as *time.Timer has it.
type Timer interface {
	Stop() bool
	Reset(d time.Duration) bool
}

// Config bounds the write path.
type Config struct {
	// MaxOps bounds the ops of one request. MaxBytes bounds its size, as
	// go-zookeeper encodes it (header and body): the smaller of the
	// client's buffer and the server's jute.maxbuffer. A batch takes writes
	// while they fit; a create or a transaction whose request would not
	// fit alone ends at once, TooLarge. A delete always fits (its path is
	// a lock node's, short beside any bound).
	MaxOps, MaxBytes int
	// PathLen is how many bytes a path takes in a request as the server
	// reads it: under a chroot, the connection puts the chroot before
	// every path after the request was sized. nil: the path's length.
	PathLen func(path string) int
	// MaxApart bounds the requests of one round that sends writes apart,
	// each alone (after they were refused twice for another write's op).
	MaxApart int
	// FoldWait is how long a queue that holds only deletes waits for a
	// create to carry them.
	FoldWait time.Duration
	// OneWrite sends one write per request (the baseline without
	// pipelining).
	OneWrite bool
	// KeepDeletesOnClose: the session's close does not end its ZooKeeper
	// session (the connection is its owner's), so deletes still queued go
	// to Conn.DeleteApart rather than being dropped.
	KeepDeletesOnClose bool
}

// Request is one request of the writer: a lone create or delete (Single),
// or a multi of its writes' ops, in order.
type Request struct {
	Writes []*Write
	Ops    []any
	Single bool
}

// Answer is what a request got: one result per op when the server
// evaluated it, else none, and the error.
type Answer struct {
	Results []zk.MultiResponse
	Err     error
}

// Verdict is what a write's end says of it.
type Verdict uint8

// The verdicts.
const (
	// Applied: the server applied the write; Results are its ops'.
	Applied Verdict = iota + 1
	// Refused: the server refused the write at its own op Op (Err is the
	// server's error); nothing of it was applied.
	Refused
	// Unknown: no answer per op came (Err says why): the write may or may
	// not have been applied, and is never sent again.
	Unknown
	// Withdrawn: never applied, and never will be: its caller gave up
	// before it was sent, or its batch was refused for another write's op
	// after its caller gave up.
	Withdrawn
	// Closed: never applied, and never will be: the session closed before
	// it was sent (Err is the session's error, Conn.Closed).
	Closed
	// TooLarge: never sent: its request alone would be larger than
	// Config.MaxBytes (Err, wrapping ErrTooLarge, names its size and the
	// limit).
	TooLarge
)

// Result is how a write ended.
type Result struct {
	Verdict Verdict
	Results []zk.MultiResponse // one per op of the write: Applied, Refused
	Op      int                // Refused: the index of the failing op among the write's
	Err     error
	// Session is the session that answered (a create's node's owner): 0
	// when unknown, or when the session changed while the write was out.
	Session int64
}

// Errors of the write path.
var (
	// ErrOutcomeUnknown reports a write whose request was sent but whose
	// answer never came (the connection was lost, the session expired with
	// the request on the wire, or the caller gave up first).
	ErrOutcomeUnknown = errors.New("zklock: transaction outcome unknown")
	// ErrWithdrawn ends a write whose caller gave up before it was
	// applied.
	ErrWithdrawn = errors.New("zklock: write withdrawn before it was applied")
)
