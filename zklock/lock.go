package zklock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/mutexbool"
)

type lockConfig struct {
	label   string
	recheck time.Duration
	acl     []zk.ACL
}

// Option configures New.
type Option func(*lockConfig)

// WithLabel adds label to the lock node's data, next to the host name and
// process id, so that an operator listing the queue knows who waits.
func WithLabel(label string) Option { return func(c *lockConfig) { c.label = label } }

// WithRecheckInterval sets how often a waiter re-reads the queue even when
// its watch has not fired (default 5s). A watch can be lost when a server
// restarts or the client moves to another ensemble member; this bounds how
// long such a loss can delay a waiter.
func WithRecheckInterval(d time.Duration) Option { return func(c *lockConfig) { c.recheck = d } }

// WithACL sets the ACL of the nodes the lock creates (default: world, all).
func WithACL(acl []zk.ACL) Option { return func(c *lockConfig) { c.acl = acl } }

// Lock is a process-level lock on one ZooKeeper path. It serves one holder
// at a time and is not reentrant; calls that race each other get ErrBusy.
type Lock struct {
	s       *Session
	path    string
	data    []byte
	recheck time.Duration
	acl     []zk.ACL
	unsub   func()

	mu     sync.Mutex
	busy   bool
	closed bool
	hold   *hold
}

// hold is one acquisition: our node, its fencing token and its loss.
type hold struct {
	node     string
	token    int64
	lost     chan struct{}
	lostOnce sync.Once
	cause    error // written before lost closes
	released atomic.Bool
	dropOnce sync.Once
}

// markLost records the cause and closes lost, once.
func (h *hold) markLost(cause error) bool {
	did := false
	h.lostOnce.Do(func() {
		h.cause = cause
		close(h.lost)
		did = true
	})
	return did
}

func (h *hold) isLost() bool {
	select {
	case <-h.lost:
		return true
	default:
		return false
	}
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
	l := &Lock{s: s, path: path, data: data, recheck: cfg.recheck, acl: cfg.acl}
	l.unsub = s.subscribe(l.onState)
	return l, nil
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
// the session expired, the connection dropped (under the default policy),
// or the node was deleted by someone else. It is not closed by Release.
// Without a hold it returns a closed channel.
func (l *Lock) Lost() <-chan struct{} {
	if l == nil {
		return closedChan
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hold == nil {
		return closedChan
	}
	return l.hold.lost
}

// Err returns why the current hold was lost (wrapping ErrLockLost), or nil
// while it is valid or when there is no hold.
func (l *Lock) Err() error {
	if l == nil {
		return ErrNilSession
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
		return ErrNilSession
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
		return ErrSessionClosed
	case l.busy:
		return ErrBusy
	}
	l.busy = true
	return nil
}

func (l *Lock) end() {
	l.mu.Lock()
	l.busy = false
	l.mu.Unlock()
}

// Acquire waits until the lock is held, ctx ends, or an error that retrying
// cannot mend occurs. When it returns an error, no node of ours is left on
// the server (a node whose deletion meets a connection loss is deleted in
// the background as soon as the connection is back).
func (l *Lock) Acquire(ctx context.Context) error {
	_, err := l.acquire(ctx, true)
	return err
}

// TryAcquire takes the lock if no other node is ahead of ours, and never
// waits for a holder: it returns false, and deletes its node, when the lock
// is held elsewhere.
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
			if !l.install(h) {
				// Closed while we queued: give the node back.
				_ = l.release(h)
				return false, ErrClosed
			}
			return true, nil
		case errors.Is(err, errNodeGone) && wait && ctx.Err() == nil && !l.s.isClosed():
			// Our node vanished while we queued (session expired, or someone
			// deleted it). We never held the lock: queue again.
			l.s.log.Info("lock node vanished while waiting; queueing again", "path", l.path)
			continue
		case errors.Is(err, errNodeGone):
			return false, fmt.Errorf("zklock: acquire %s: %w", l.path, err)
		default:
			return false, err
		}
	}
}

// errParentsMade asks retry to create our node again once the missing
// parents exist.
var errParentsMade = errors.New("zklock: lock path created")

// errNodeGone reports that our queued node disappeared before we held the
// lock.
var errNodeGone = errors.New("zklock: lock node vanished while queued")

// attempt queues one node and waits for it to lead (or not, when !wait).
// It returns the hold, nil when !wait and the lock is taken, or an error.
func (l *Lock) attempt(ctx context.Context, wait bool) (*hold, error) {
	guid := newGUID()
	node, q, token, err := l.enqueue(ctx, guid)
	if err != nil {
		return nil, err
	}
	name := path.Base(node)
	if position(q, name, "") < 0 {
		// The listing went out on a new connection before the create was
		// applied (possible only across a reconnect): list again.
		q = nil
	}
	if q != nil && position(q, name, "") > 0 && !wait {
		l.s.queueDelete(l.path, node)
		return nil, nil
	}
	if q == nil || position(q, name, "") != 0 {
		if !wait {
			// Decide on a fresh listing.
			children, stat, err := l.s.conn.Children(l.path)
			if err != nil {
				l.s.queueDelete(l.path, node)
				return nil, fmt.Errorf("zklock: list %s: %w", l.path, err)
			}
			if position(sortQueue(children), name, "") != 0 {
				l.s.queueDelete(l.path, node)
				return nil, nil
			}
			token = stat.Pzxid
		} else if token, err = l.waitTurn(ctx, node, q); err != nil {
			if !errors.Is(err, errNodeGone) {
				l.s.queueDelete(l.path, node)
			}
			return nil, err
		}
	}
	return l.lead(node, token), nil
}

// enqueue creates our node and lists the queue, pipelined: the listing is
// sent right behind the create on the same session, so it sees our node
// and the whole exchange costs one round trip. The delete of a release not
// yet sent goes in the same multi transaction as the create. A create that
// meets a connection loss may have been applied: before creating another,
// we look for our GUID (protection mode), so no orphan blocks the queue.
// It returns our node, the sorted queue (nil when the listing failed) and
// the listing's pzxid.
func (l *Lock) enqueue(ctx context.Context, guid string) (node string, q []entry, pzxid int64, err error) {
	prefix := l.path + "/" + nodePrefix(guid)
	stale, sent := l.s.takePending(l.path)
	if sent != nil {
		select { // microseconds: the delete is being written
		case <-sent:
		case <-ctx.Done():
			return "", nil, 0, ctx.Err()
		}
	}
	// staleGone is set, on the goroutine that sends the create, once the
	// stale node is known to be deleted; read when enqueue returns, which
	// may be before that goroutine is done (ctx ended).
	var staleGone atomic.Bool
	if stale != "" {
		defer func() {
			if !staleGone.Load() { // the multi did not happen: delete it alone
				l.s.deleteInBackground(stale)
			}
		}()
	}
	create := func() (string, error) {
		if stale == "" || staleGone.Load() {
			return l.s.conn.Create(prefix, l.data, zk.FlagEphemeralSequential, l.acl)
		}
		res, err := l.s.conn.Multi(
			&zk.DeleteRequest{Path: stale, Version: -1},
			&zk.CreateRequest{Path: prefix, Data: l.data, Acl: l.acl, Flags: zk.FlagEphemeralSequential})
		if err == nil && len(res) == 2 {
			staleGone.Store(true)
			return res[1].String, nil
		}
		if errors.Is(res0Err(res), zk.ErrNoNode) {
			// The stale node was already gone, so the transaction did not
			// run: create alone.
			staleGone.Store(true)
			return l.s.conn.Create(prefix, l.data, zk.FlagEphemeralSequential, l.acl)
		}
		return "", err
	}
	parentsMade, mayExist := false, false
	err = l.s.retry(ctx, func() error {
		if mayExist {
			// An earlier create met a connection loss: it may have been
			// applied. Create again only once we know it was not.
			found, ferr := l.findOwn(guid)
			if ferr != nil {
				return ferr
			}
			if found != "" {
				node = found
				return nil
			}
			mayExist = false
		}
		var created string
		var cerr error
		fin := l.s.send(ctx, guid, []int32{opCreate, opMulti}, func() { created, cerr = create() })
		if ctx.Err() != nil {
			l.abandon(fin, guid, &created)
			return ctx.Err()
		}
		children, stat, lerr := l.s.conn.Children(l.path)
		<-fin
		switch {
		case cerr == nil:
			node = created
			if lerr == nil {
				q, pzxid = sortQueue(children), stat.Pzxid
			}
			return nil
		case errors.Is(cerr, zk.ErrNoNode) && !parentsMade:
			parentsMade = true
			if err := l.ensureParents(); err != nil {
				return err
			}
			return errParentsMade // retried like a transient error
		case errors.Is(cerr, zk.ErrConnectionClosed):
			mayExist = true
			return cerr
		default:
			return cerr
		}
	})
	if err != nil {
		return "", nil, 0, fmt.Errorf("zklock: queue on %s: %w", l.path, err)
	}
	return node, q, pzxid, nil
}

func res0Err(res []zk.MultiResponse) error {
	if len(res) == 0 {
		return nil
	}
	return res[0].Error
}

// abandon cleans up after a create that ctx gave up on: once the request
// completes, whatever it created is deleted.
func (l *Lock) abandon(fin <-chan struct{}, guid string, created *string) {
	l.s.goBackground(func() {
		select {
		case <-fin:
		case <-l.s.ctx.Done():
			return
		}
		if *created != "" {
			l.s.deleteNow(*created)
			return
		}
		if found, err := l.findOwn(guid); err == nil && found != "" {
			l.s.deleteNow(found)
		}
	})
}

// findOwn looks for the node carrying guid under the lock path.
func (l *Lock) findOwn(guid string) (string, error) {
	children, _, err := l.s.conn.Children(l.path)
	if err != nil {
		return "", err
	}
	q := sortQueue(children)
	if i := position(q, "", guid); i >= 0 {
		return l.path + "/" + q[i].name, nil
	}
	return "", nil
}

// ensureParents creates the lock path and its missing ancestors as
// container nodes, which the server removes once they are empty.
func (l *Lock) ensureParents() error {
	var mk func(p string) error
	mk = func(p string) error {
		_, err := l.s.conn.CreateContainer(p, nil, zk.FlagContainer, l.acl)
		if errors.Is(err, zk.ErrNoNode) && path.Dir(p) != "/" {
			if err := mk(path.Dir(p)); err != nil {
				return err
			}
			_, err = l.s.conn.CreateContainer(p, nil, zk.FlagContainer, l.acl)
		}
		if err == nil || errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		return err
	}
	return mk(l.path)
}

// waitTurn blocks until node leads the queue. agapple's design: a watcher
// goroutine owns the watch on our predecessor; each time it fires (or the
// periodic re-check comes due) it re-reads the queue, and when our node
// leads, or the wait cannot go on, it sets the BooleanMutex that this call
// waits on.
func (l *Lock) waitTurn(ctx context.Context, node string, q []entry) (token int64, err error) {
	w := &waiter{l: l, node: node, name: path.Base(node), q: q, // q != nil only when we are not first

		signal: mutexbool.New(false), stop: make(chan struct{})}
	l.s.goBackground(w.run)
	if err := w.signal.Get(ctx); err != nil {
		close(w.stop)
		return 0, err
	}
	return w.pzxid, w.err
}

type waiter struct {
	l      *Lock
	node   string
	name   string
	q      []entry // first listing, from enqueue; nil to list
	signal *mutexbool.BooleanMutex
	err    error // written before signal is set
	pzxid  int64 // of the listing that found us first; written before signal
	stop   chan struct{}
}

func (w *waiter) finish(err error) {
	w.err = err
	w.signal.Set(true)
}

func (w *waiter) run() {
	s := w.l.s
	retryWait := 10 * time.Millisecond
	pause := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-w.stop:
		case <-s.ctx.Done():
			w.finish(ErrSessionClosed)
		}
		return false
	}
	for {
		q := w.q
		w.q = nil
		if q == nil {
			children, stat, err := s.conn.Children(w.l.path)
			if err != nil {
				if !transient(err) {
					w.finish(err)
					return
				}
				if !pause(retryWait) {
					return
				}
				retryWait = min(2*retryWait, s.cfg.maxRetryWait)
				continue
			}
			q = sortQueue(children)
			w.pzxid = stat.Pzxid
		}
		i := position(q, w.name, "")
		switch {
		case i < 0:
			w.finish(errNodeGone)
			return
		case i == 0:
			w.finish(nil)
			return
		}
		// Watch only our predecessor, with a data watch: an exists watch on
		// a node that is already gone would stay behind on the server.
		_, _, ev, err := s.conn.GetW(w.l.path + "/" + q[i-1].name)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			continue // it went away in between: look again at once
		case err != nil && !transient(err):
			w.finish(err)
			return
		case err != nil:
			if !pause(retryWait) {
				return
			}
			retryWait = min(2*retryWait, s.cfg.maxRetryWait)
			continue
		}
		retryWait = 10 * time.Millisecond
		t := time.NewTimer(w.l.recheck)
		select {
		case <-ev:
		case <-t.C:
		case <-w.stop:
			t.Stop()
			return
		case <-s.ctx.Done():
			t.Stop()
			w.finish(ErrSessionClosed)
			return
		}
		t.Stop()
	}
}

// lead turns our leading node into a hold. The fencing token is the pzxid
// of the listing that found our node first: the zxid of the last change to
// the queue, which is at least our node's creation zxid and, since a
// successor can only lead on a listing taken after our node's deletion,
// strictly below every later holder's token. Taking it from the listing
// saves the read of our own node that czxid would cost. The holder's watch
// on its own node, through which a deletion by someone else is noticed, is
// set in the background: the hold does not wait for it.
func (l *Lock) lead(node string, token int64) *hold {
	h := &hold{node: node, token: token, lost: make(chan struct{})}
	l.s.goBackground(func() {
		_, _, ev, err := l.s.conn.GetW(node)
		if err != nil {
			if errors.Is(err, zk.ErrNoNode) && !h.released.Load() && h.markLost(ErrNodeDeleted) {
				l.s.log.Warn("lock node deleted while held", "node", node)
			}
			return
		}
		select {
		case e := <-ev:
			if e.Type == zk.EventNodeDeleted && !h.released.Load() && h.markLost(ErrNodeDeleted) {
				l.s.log.Warn("lock node deleted while held", "node", node)
			}
		case <-l.s.ctx.Done():
		}
	})
	return h
}

// install makes h the current hold, unless the lock was closed. A state
// change that arrived before h was visible to onState is applied here.
func (l *Lock) install(h *hold) bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return false
	}
	l.hold = h
	l.mu.Unlock()
	l.onState(l.s.State())
	return true
}

// onState applies a session state change to the current hold.
func (l *Lock) onState(st State) {
	l.mu.Lock()
	h := l.hold
	l.mu.Unlock()
	if h == nil {
		return
	}
	var cause error
	switch st {
	case StateDisconnected:
		if !l.s.cfg.expiryOnly {
			cause = ErrDisconnected
		}
	case StateExpired:
		cause = ErrSessionExpired
	case StateClosed:
		cause = ErrSessionClosed
	}
	if cause != nil && h.markLost(cause) {
		l.s.log.Warn("lock lost", "node", h.node, "cause", cause)
		if errors.Is(cause, ErrDisconnected) {
			// We told the holder it lost the lock, so give the node up as
			// soon as the connection is back, lest we block the queue.
			l.dropNode(h)
		}
	}
}

// dropNode deletes a lost hold's node once, through the same pending
// delete as a release, so that the session's next create queues behind it.
func (l *Lock) dropNode(h *hold) {
	h.dropOnce.Do(func() {
		if !l.s.isClosed() {
			l.s.queueDelete(l.path, h.node)
		}
	})
}

// Release gives the lock up. It does not wait for ZooKeeper: the delete of
// our node goes out a scheduling delay later, or, when this session
// acquires the same path first, in one multi transaction with that
// acquisition's create; either way the session's next create queues behind
// it. Another process sees the lock free once the server has applied the
// delete, so a TryAcquire that races a Release from elsewhere can still
// fail. A delete that meets a connection loss is retried in the background
// until the node is gone or the session ends. Releasing a lost hold returns an error wrapping
// ErrLockLost and its cause; releasing without a hold returns ErrNotHeld.
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
	h.released.Store(true)
	if h.isLost() {
		l.dropNode(h)
		return fmt.Errorf("%w: %w", ErrLockLost, h.cause)
	}
	h.dropOnce.Do(func() { l.s.queueDelete(l.path, h.node) })
	return nil
}

// Participant is one node in a lock's queue.
type Participant struct {
	Node     string // node name under the lock path
	Sequence int32  // its sequence number
	Data     []byte // what its creator wrote (zklock: JSON host, pid, label)
	Holder   bool   // first in the queue: it holds the lock
}

// Participants lists the lock's queue in order, holder first, with each
// node's data.
func (l *Lock) Participants(ctx context.Context) ([]Participant, error) {
	if l == nil {
		return nil, ErrNilSession
	}
	if ctx == nil {
		return nil, ErrNilContext
	}
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	var children []string
	err := l.s.retry(ctx, func() error {
		var err error
		children, _, err = l.s.conn.Children(l.path)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("zklock: list %s: %w", l.path, err)
	}
	var out []Participant
	for _, e := range sortQueue(children) {
		data, _, err := l.s.conn.Get(l.path + "/" + e.name)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("zklock: read %s: %w", e.name, err)
		}
		out = append(out, Participant{Node: e.name, Sequence: e.seq, Data: data, Holder: len(out) == 0})
	}
	return out, nil
}

// Close releases a hold if there is one and detaches the lock from its
// session; later calls return ErrClosed. Close is idempotent.
func (l *Lock) Close() error {
	if l == nil {
		return ErrNilSession
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	h := l.hold
	l.hold = nil
	l.mu.Unlock()
	l.unsub()
	if h != nil {
		_ = l.release(h)
	}
	return nil
}
