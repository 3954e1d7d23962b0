package zkcompat

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/closed"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// Lock is a handle on a lock path, like zk.Lock: one holder at a time per
// handle; give each goroutine its own. Handles of one process on one path
// and connection share one ZooKeeper node. A Lock's methods are safe for
// concurrent use, though a handle used by two goroutines at once gets
// zk.ErrDeadlock, as a zk.Lock would deadlock.
type Lock struct {
	conn *zk.Conn
	path string
	acl  []zk.ACL

	mu    sync.Mutex
	state int         // idle, locking or holding
	h     *handleHold // the current hold, when holding
}

const (
	idle = iota
	locking
	holding
)

// handleHold is one hold of a handle.
type handleHold struct {
	e         *pathEntry
	held      context.Context // what tier.Lock.Acquire returned
	del       *deletion       // its node's delete, for Unlock to await (nil if unknown)
	lost      chan struct{}
	releasing atomic.Bool
	stop      func() bool // stops the loss watch
}

// NewLock returns a handle on path for conn, with the ACL its nodes are
// created with, as zk.NewLock does. It starts conn's session (once per
// connection and process), whose lease is then proved in the background
// while conn lives: a first Lock soon after waits for what remains of it
// (π of the servers' tick: docs/interop.md), a later one for nothing. No
// node is created until Lock. The ACL of the first handle that locks a
// path in a process is the one the shared node gets.
func NewLock(conn *zk.Conn, path string, acl []zk.ACL) *Lock {
	start(conn)
	return &Lock{conn: conn, path: path, acl: acl}
}

// Lock waits until the lock is held. It returns zk.ErrDeadlock if this
// handle already holds it or is acquiring it, and zk.ErrNoServer if the
// connection has no session and go-zookeeper fails to reach any of its
// servers (see the package doc); a connection lost once a server was
// reached is retried. Its errors are go-zookeeper's own values wherever
// zk.Lock's would be.
func (l *Lock) Lock() error { return l.LockContext(context.Background()) }

// LockWithData is Lock; zk.Lock writes data into its node, but the
// node here is shared by the process's handles, so data is not written.
func (l *Lock) LockWithData(data []byte) error { return l.LockContext(context.Background()) }

// LockContext is Lock with a wait that ctx can end. When ctx ends first
// it holds nothing and returns an error that wraps ctx's, naming the path
// and the holder: errors.Is(err, context.DeadlineExceeded) (or
// context.Canceled) holds, err == ctx.Err() does not
// (TestLockContextErrorWrapsContexts).
//
// It returns a little after ctx ends: once the wait has seen it and queued
// the delete of its node, and, when the wait does not know the holder to
// be current, after one read that names the holder (a round trip or two;
// bounded by a quarter of the wait, between 50 ms and 1 s, when the server
// does not answer). Against scripts/zk.sh's server, 30 waits of 500 ms
// returned 0.1 to 1.4 ms past the deadline (TestLockContextDeadline, whose
// doc gives the command; docs/interop.md the run); a busy machine delays
// the return further.
//
// It does not wait for its node's delete, which is sent in the
// background, guaranteed (retried until the node or its session is gone).
// A listing sent right after the return still showed the node in 24 of
// those 30 waits; another connection saw it go 1.8 to 6.1 ms after the
// return (one run's figures, not bounds). Without a connection to ZooKeeper it goes once the connection is
// back, or with its session. A handle whose wait ended behind another
// handle of the process (in its tier 1) had no node of its own.
func (l *Lock) LockContext(ctx context.Context) error {
	if l == nil || l.conn == nil {
		return fmt.Errorf("zkcompat: %w", zklock.ErrNilSession)
	}
	if ctx == nil {
		return zklock.ErrNilContext
	}
	if len(l.acl) == 0 {
		return zk.ErrInvalidACL // what the server answers zk.Lock's create
	}
	if zklock.ValidatePath(l.path) != nil {
		return zk.ErrInvalidPath
	}
	l.mu.Lock()
	if l.state != idle {
		l.mu.Unlock()
		return zk.ErrDeadlock
	}
	l.state = locking
	l.mu.Unlock()

	h, err := acquire(ctx, l.conn, l.path, l.acl)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.state = idle
		if s := zkSentinel(err); s != nil {
			return s
		}
		return err
	}
	l.state, l.h = holding, h
	return nil
}

func acquire(ctx context.Context, conn *zk.Conn, path string, acl []zk.ACL) (*handleHold, error) {
	if err := reachable(ctx, conn, path); err != nil {
		return nil, err
	}
	e, err := obtain(conn, path, acl)
	if err != nil {
		return nil, err
	}
	held, err := e.l.Acquire(ctx)
	if err != nil {
		e.done()
		return nil, err
	}
	h := &handleHold{e: e, held: held, del: e.takeLeader(), lost: make(chan struct{})}
	h.stop = context.AfterFunc(held, func() {
		if !h.releasing.Load() {
			close(h.lost)
		}
	})
	return h, nil
}

// Lost returns a channel that is closed when the current hold is lost
// (session expired, connection lost under zklock's default policy, node
// deleted by someone else, CloseConn); Unlock does not close it. Without a
// hold it returns a closed channel.
func (l *Lock) Lost() <-chan struct{} {
	if l == nil {
		return closed.Chan
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != holding {
		return closed.Chan
	}
	return l.h.lost
}

// Token returns the fencing token of the current hold (see
// tier.Lock.Token): a number that grows with every holder of the path,
// for a guarded resource to reject a holder that lost the lock without
// knowing it. Handles of one process that follow each other on one node
// may share a token. Without a hold it returns 0.
func (l *Lock) Token() int64 {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	h := l.h
	l.mu.Unlock()
	if h == nil {
		return 0
	}
	tok, err := h.e.l.Token(h.held)
	if err != nil {
		return 0
	}
	return tok
}

// The process's shared state: one session per connection, one tier.Lock
// per path on it.
var registry = struct {
	mu    sync.Mutex
	conns map[*zk.Conn]*connEntry
}{conns: map[*zk.Conn]*connEntry{}}

var logger atomic.Pointer[slog.Logger]

// SetLogger sets the logger of the sessions and locks the drop-in makes
// from then on: state changes and detail as well as warnings. Without it
// they log only warnings (a lost hold, a server that cannot be reached),
// to slog.Default(), as zklock sessions do by default. zk.NewLock takes no
// options, so this is package-wide; nil restores the default.
func SetLogger(l *slog.Logger) { logger.Store(l) }

// sessionOptions are the options of the sessions the drop-in makes.
func sessionOptions() []zklock.SessionOption {
	if l := logger.Load(); l != nil {
		return []zklock.SessionOption{zklock.WithLogger(l.With("component", "zkcompat"))}
	}
	return nil
}

// A connection's session lives as long as the connection, from its first
// NewLock: its lease is proved in the background meanwhile (a few syncs a
// session timeout: docs/interop.md), so that a Lock after any quiet spell
// is granted on its create's answer, as zk.Lock's is. Closing it after a
// quiet spell, as the drop-in did (30 s), made the next Lock set a session
// up again and wait for a lease of its own: 3.6 s with a 10-s timeout.
type connEntry struct {
	conn  *zk.Conn
	s     *zklock.Session
	paths map[string]*pathEntry
}

type pathEntry struct {
	c    *connEntry
	path string
	l    *tier.Lock
	refs int       // handles locking or holding, under registry.mu
	dels deletions // the deletes of its handles' nodes (unlock.go)
}

// obtain returns the shared lock of path on conn, counting one more user.
func obtain(conn *zk.Conn, path string, acl []zk.ACL) (*pathEntry, error) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	c := registry.conns[conn]
	if c == nil {
		var err error
		if c, err = newConnEntry(conn); err != nil {
			return nil, err
		}
		registry.conns[conn] = c
	}
	e := c.paths[path]
	if e == nil {
		e = &pathEntry{c: c, path: path}
		l, err := tier.New(c.s, path,
			// The lock path persistent, as zk.Lock makes it: its users keep
			// data on it (a key-value store's value) that a container would
			// take with it once empty.
			tier.WithLockOptions(zklock.WithACL(acl), zklock.WithLabel("zkcompat"), zklock.WithDeleteHandler(e.onDeleted),
				zklock.WithPersistentPath()),
			tier.WithPositionHandler(e.onPosition))
		if err != nil {
			return nil, fmt.Errorf("zkcompat: %w", err)
		}
		e.l = l
		c.paths[path] = e
		if testHookNewPath != nil {
			testHookNewPath(e)
		}
	}
	e.refs++
	return e, nil
}

// done counts one user less, closing the lock when it was the last.
func (e *pathEntry) done() {
	registry.mu.Lock()
	e.refs--
	last := e.refs == 0 && e.c.paths[e.path] == e
	if last {
		delete(e.c.paths, e.path)
	}
	registry.mu.Unlock()
	if last {
		_ = e.l.Close()
	}
}

// CloseConn ends the drop-in's use of conn: holds on it are lost (their
// Lost channels close, waits return an error), its locks and session are
// closed and its background goroutines end. Call it before closing a
// connection for good; conn itself stays open. Handles of conn can lock
// again afterwards, on a new session. It waits for the background deletes
// of released nodes (see Unlock): one that the server keeps refusing keeps
// it waiting until it succeeds or conn is closed.
func CloseConn(conn *zk.Conn) {
	registry.mu.Lock()
	c := registry.conns[conn]
	delete(registry.conns, conn)
	var locks []*tier.Lock
	if c != nil {
		for _, e := range c.paths {
			locks = append(locks, e.l)
		}
		c.paths = map[string]*pathEntry{}
	}
	registry.mu.Unlock()
	if c == nil {
		return
	}
	for _, l := range locks {
		_ = l.Close()
	}
	c.close()
}

func (c *connEntry) close() { _ = c.s.Close() }

// newConnEntry wraps conn in a zklock.Session. zk.Connect's event channel
// belongs to the caller, so none is passed: the session then learns its
// state by polling the connection's state and session id.
func newConnEntry(conn *zk.Conn) (*connEntry, error) {
	s, err := zklock.NewSession(conn, nil, sessionOptions()...)
	if err != nil {
		return nil, fmt.Errorf("zkcompat: %w", err)
	}
	return adopt(conn, s), nil
}

// adopt makes the entry of conn's session s.
func adopt(conn *zk.Conn, s *zklock.Session) *connEntry {
	c := &connEntry{conn: conn, s: s, paths: map[string]*pathEntry{}}
	// The caller's Close of conn ends the session (its Done): the entry
	// goes with it, and holds nothing of conn's for the process's life.
	go func() {
		<-s.Done()
		registry.mu.Lock()
		if registry.conns[conn] == c {
			delete(registry.conns, conn)
		}
		registry.mu.Unlock()
		c.close()
	}()
	return c
}

// start makes conn's session, unless it has one, so that its lease is
// proved by the time a lock is asked for. An error is left for Lock to
// meet and tell.
func start(conn *zk.Conn) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if conn == nil || registry.conns[conn] != nil {
		return
	}
	if c, err := newConnEntry(conn); err == nil {
		registry.conns[conn] = c
	}
}
