package zklock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

type lockConfig struct {
	label   string
	recheck time.Duration
	acl     []zk.ACL
	onLost  func(node string, cause error)

	revocable bool              // WithRevocable
	onRevoked func(node string) // WithRevocationHandler

	onPosition func(Position) // see position.go
}

// Option configures New.
type Option func(*lockConfig)

// WithLabel adds label to the lock node's data, next to the host name and
// process id, so that an operator listing the queue knows who waits. The
// node's data, label included, may not exceed 64 KiB (New refuses it with
// ErrInvalidOption): a request larger than the server's jute.maxbuffer
// (1 MB by default) makes it drop the connection, and with it the session.
func WithLabel(label string) Option { return func(c *lockConfig) { c.label = label } }

// WithRecheckInterval sets how often a waiter re-reads the queue even when
// its watch has not fired (default 5s). A watch can be lost when a server
// restarts or the client moves to another ensemble member; this bounds how
// long such a loss can delay a waiter.
func WithRecheckInterval(d time.Duration) Option { return func(c *lockConfig) { c.recheck = d } }

// WithACL sets the ACL of the nodes the lock creates (default: world, all):
// its lock nodes, and the lock path and any missing ancestor it creates as
// container nodes. ZooKeeper checks a create or delete of a node against
// its parent's ACL, so it is the lock path's ACL that decides who may
// queue and who may delete a holder's node; a lock path that already
// exists keeps its own. With zk.AuthACL or zk.DigestACL, give the session
// the credentials (WithDigestAuth). See ExampleWithDigestAuth.
func WithACL(acl []zk.ACL) Option { return func(c *lockConfig) { c.acl = acl } }

// WithLossHandler calls fn with the hold's node and the cause (ErrDisconnected,
// ErrSessionExpired, ErrLeaseExpired, ErrNodeDeleted or ErrSessionClosed)
// when a hold is lost, synchronously, at the moment the loss is detected,
// so that work under the lock can be stopped with no goroutine hop in
// between (package tier cancels its held context here). fn may run on
// go-zookeeper's event goroutine: it must not block, nor call methods of
// the Lock or Session.
func WithLossHandler(fn func(node string, cause error)) Option {
	return func(c *lockConfig) { c.onLost = fn }
}

// Lock is a process-level lock on one ZooKeeper path. It serves one holder
// at a time and is not reentrant; calls that race each other get ErrBusy.
type Lock struct {
	s        *Session
	path     string
	data     []byte
	recheck  time.Duration
	acl      []zk.ACL
	onLost   func(node string, cause error)
	rule     queueRule                       // who may go, whom to watch: mutexRule
	marker   string                          // what follows the GUID in our node names: lockMarker
	parse    func(name string) (int32, bool) // which children queue, and their sequence: nil for Contender
	mayQueue func() error                    // refuses an acquisition before it queues (a write lock behind our own read node); nil: none
	noWait   func() bool                     // makes Acquire a try that fails (a downgrade that would wait for ever); nil: never

	// Revocation (revoke.go): holds watch their node's data for
	// RevokeMessage, and onRevoked (nil: none) is told of a request.
	revocable bool
	onRevoked func(node string)

	onPosition func(Position) // Acquire's position handler (position.go); nil: none

	mu     sync.Mutex
	busy   bool
	closed bool
	hold   *hold
	abort  context.CancelCauseFunc // ends the acquisition in progress (Close); nil when none
}

// nodeData says who created a lock node.
type nodeData struct {
	Host  string `json:"host"`
	Pid   int    `json:"pid"`
	Label string `json:"label,omitempty"`
}

// New returns a lock on path (an absolute ZooKeeper path; its parents are
// created as container nodes when first needed).
func New(s *Session, path string, opts ...Option) (*Lock, error) {
	if s == nil {
		return nil, ErrNilSession
	}
	if err := ValidatePath(path); err != nil {
		return nil, err
	}
	if s.isClosed() {
		return nil, ErrSessionClosed
	}
	cfg := lockConfig{recheck: 5 * time.Second, acl: zk.WorldACL(zk.PermAll)}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.recheck <= 0 {
		return nil, fmt.Errorf("%w: recheck interval %v", ErrInvalidOption, cfg.recheck)
	}
	if len(cfg.acl) == 0 {
		return nil, fmt.Errorf("%w: empty ACL", ErrInvalidOption)
	}
	host, _ := os.Hostname()
	data, err := json.Marshal(nodeData{Host: host, Pid: os.Getpid(), Label: cfg.label})
	if err != nil {
		return nil, fmt.Errorf("zklock: node data: %w", err)
	}
	if len(data) > maxDataLen {
		return nil, fmt.Errorf("%w: node data of %d bytes (label included): at most %d", ErrInvalidOption, len(data), maxDataLen)
	}
	return &Lock{s: s, path: path, data: data, recheck: cfg.recheck, acl: cfg.acl, onLost: cfg.onLost, rule: mutexRule, marker: lockMarker,
		revocable: cfg.revocable, onRevoked: cfg.onRevoked, onPosition: cfg.onPosition}, nil
}

// newRecipeLock is New for another recipe's queue on the same core: its
// nodes are named _c_<guid><marker><seq>, rule decides who goes and whom
// to watch, and parse (nil: Contender) picks the children that queue.
func newRecipeLock(s *Session, path, marker string, rule queueRule, parse func(string) (int32, bool), opts ...Option) (*Lock, error) {
	l, err := New(s, path, opts...)
	if err != nil {
		return nil, err
	}
	l.marker, l.rule, l.parse = marker, rule, parse
	return l, nil
}

// sortQueue orders the children that queue on this lock's path: every
// family's contenders for the mutex and the read/write lock, this lock's
// parse otherwise.
func (l *Lock) sortQueue(children []string) []entry {
	if l.parse == nil {
		return sortQueue(children)
	}
	return sortBy(children, l.parse)
}

// Session returns the session the lock lives on.
func (l *Lock) Session() *Session {
	if l == nil {
		return nil
	}
	return l.s
}

// Path returns the lock path the lock's nodes are created under.
func (l *Lock) Path() string {
	if l == nil {
		return ""
	}
	return l.path
}

// Node returns the full path of the node of the current hold, or "".
func (l *Lock) Node() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hold == nil {
		return ""
	}
	return l.hold.node
}

// Token returns the fencing token of the current hold: a zxid that is at
// least the creation zxid of its node and strictly greater than the token
// of every earlier holder of the path (see lead). A resource that records
// the highest token it has seen and rejects lower ones cannot be written by
// a holder that lost the lock without knowing it. Token returns 0 when the
// lock is not held.
func (l *Lock) Token() int64 {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hold == nil {
		return 0
	}
	return l.hold.token
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Lost returns a channel that is closed when the current hold is lost:
// the session expired or was replaced, the connection dropped (under the
// default policy), the session could not be confirmed with the leader in
// time (see WithLossOnExpiryOnly), or the node was deleted by someone else.
// It is not closed by Release.
// Without a hold it returns a closed channel.
func (l *Lock) Lost() <-chan struct{} {
	return l.holdChan(func(h *hold) <-chan struct{} { return h.lost })
}

// holdChan returns pick's channel of the current hold, or a closed channel
// without one.
func (l *Lock) holdChan(pick func(*hold) <-chan struct{}) <-chan struct{} {
	if l == nil {
		return closedChan
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hold == nil {
		return closedChan
	}
	return pick(l.hold)
}

// Err returns why the current hold was lost (wrapping ErrLockLost), or nil
// while it is valid or when there is no hold.
func (l *Lock) Err() error {
	if l == nil {
		return errNil("Lock")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hold == nil || !l.hold.isLost() {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrLockLost, l.hold.cause)
}

// begin claims the lock for one call, rejecting misuse.
func (l *Lock) begin(ctx context.Context) error {
	if l == nil {
		return errNil("Lock")
	}
	if ctx == nil {
		return ErrNilContext
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return ErrClosed
	case l.s.isClosed():
		return l.s.closedErr()
	case l.busy:
		return ErrBusy
	}
	l.busy = true
	return nil
}

func (l *Lock) end() {
	l.mu.Lock()
	l.busy, l.abort = false, nil
	l.mu.Unlock()
}

// Acquire waits until the lock is held, ctx ends, or an error that retrying
// cannot mend occurs. Connection losses, failed writes and session
// expiries while queueing are retried. When it returns an error, no node of
// ours is left on the server (a node whose deletion meets a connection
// loss is deleted in the background as soon as the connection is back, or
// goes with its session).
func (l *Lock) Acquire(ctx context.Context) error {
	_, err := l.acquire(ctx, true)
	return err
}

// TryAcquire takes the lock if no other node is ahead of ours, and never
// waits for a holder: it returns false, and deletes its node, when the lock
// is held elsewhere, or when this session's own previous node cannot be
// deleted first because the connection is down.
func (l *Lock) TryAcquire(ctx context.Context) (bool, error) {
	return l.acquire(ctx, false)
}

func (l *Lock) acquire(ctx context.Context, wait bool) (bool, error) {
	if err := l.begin(ctx); err != nil {
		return false, err
	}
	defer l.end()
	if err := ctx.Err(); err != nil {
		return false, err // do not queue a node only to delete it
	}
	// Close ends the acquisition through its context, whatever it waits for.
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	l.mu.Lock()
	l.abort = abort
	l.mu.Unlock()
	// A wait that could never end is refused instead (see RWLock).
	tryOnly := wait && l.noWait != nil && l.noWait()
	ok, err := l.acquireNode(ctx, wait && !tryOnly)
	switch {
	case err != nil && errors.Is(context.Cause(ctx), ErrClosed):
		err = ErrClosed
	case err == nil && !ok && tryOnly:
		err = ErrDowngradeBlocked
	}
	return ok, err
}

func (l *Lock) acquireNode(ctx context.Context, wait bool) (bool, error) {
	if l.mayQueue != nil {
		if err := l.mayQueue(); err != nil {
			return false, err
		}
	}
	l.mu.Lock()
	if h := l.hold; h != nil {
		if !h.isLost() {
			l.mu.Unlock()
			return false, ErrAlreadyHeld
		}
		// A lost hold that was never released: give its node up now.
		l.hold = nil
		l.dropNode(h)
	}
	l.mu.Unlock()

	for {
		h, err := l.attempt(ctx, wait)
		switch {
		case err == nil && h == nil:
			return false, nil
		case err == nil:
			return true, nil
		case errors.Is(err, errNodeGone) && wait && ctx.Err() == nil && !l.s.isClosed():
			// Our node vanished while we queued (the session expired, or
			// someone deleted it). We never held the lock: queue again.
			l.s.log.Info("lock node vanished while waiting; queueing again", "path", l.path)
			continue
		case errors.Is(err, errNodeGone):
			return false, fmt.Errorf("zklock: acquire %s: %w", l.path, err)
		default:
			return false, err
		}
	}
}

// Release gives the lock up. It does not wait for ZooKeeper: the delete of
// our node goes out a scheduling delay later, or, when this session
// acquires the same path first, in one multi transaction with that
// acquisition's create; either way the session's next create queues behind
// it. Another process sees the lock free once the server has applied the
// delete, so a TryAcquire that races a Release from elsewhere can still
// fail. The delete is guaranteed: whatever error it meets, it is retried in
// the background until the node is gone or its session is over. Releasing
// a lost hold returns an error wrapping ErrLockLost and its cause;
// releasing without a hold returns ErrNotHeld.
func (l *Lock) Release(ctx context.Context) error {
	if err := l.begin(ctx); err != nil {
		return err
	}
	defer l.end()
	l.mu.Lock()
	h := l.hold
	l.hold = nil
	l.mu.Unlock()
	if h == nil {
		return ErrNotHeld
	}
	return l.release(h)
}

func (l *Lock) release(h *hold) error {
	// Whether the hold was lost is decided before its node is given up:
	// the delete fires our own-node watch, which would otherwise report
	// the release itself as a deletion by someone else.
	lost := h.isLost()
	h.released.Store(true)
	l.s.forget(h)
	l.dropNode(h)
	if lost {
		return fmt.Errorf("%w: %w", ErrLockLost, h.cause)
	}
	return nil
}

// Close releases a hold if there is one, ends an acquisition in progress
// (it returns ErrClosed, leaving no node), and detaches the lock from its
// session; later calls return ErrClosed. Close is idempotent.
func (l *Lock) Close() error {
	if l == nil {
		return errNil("Lock")
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	h := l.hold
	l.hold = nil
	if l.abort != nil {
		l.abort(ErrClosed)
	}
	l.mu.Unlock()
	if h != nil {
		_ = l.release(h)
	}
	return nil
}
