package zklock

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tierlock/tierlock/internal/closed"
)

// Curator's InterProcessSemaphoreV2 layout: a mutex at <path>/locks
// serializes lease creation, and a lease is _c_<guid>-lease-<seq>
// (leaseMarker) under <path>/leases.
const (
	semLocks  = "/locks"
	semLeases = "/leases"
)

// ErrInvalidPermits reports a permit count outside 1..n.
var ErrInvalidPermits = errors.New("zklock: invalid permit count")

// Semaphore is a process-level counting semaphore of n leases on
// ZooKeeper, laid out as Curator's InterProcessSemaphoreV2 so that Curator
// processes and ours share the n leases of a path.
//
// Acquiring k leases takes the mutex at <path>/locks, creates k lease
// nodes under <path>/leases (each pipelined with its listing, with
// protection mode: a create whose reply was lost is found again by its
// GUID, never made twice), waits until each is among the first n lease
// nodes in sequence order, then releases the mutex. A lease node's index
// can only fall (only earlier nodes can go, later ones sort after it), so
// once among the first n it stays there: at most n nodes hold at any time,
// whoever created them and however their creations race; kazoo#213's
// over-admission came from deciding on a count read before the create.
// The mutex is for Curator's sake, whose waiters count all lease nodes
// (size <= n) and would wait forever behind lease nodes made outside it;
// under it there is at most one waiting lease creator, the last, and the
// two rules agree.
//
// Each lease node is a hold of the queue core: it is granted under the
// session's lease (loss before grant), watched, and given up with a
// guaranteed delete. A Semaphore is safe for concurrent use; its Acquire
// calls take the mutex one at a time. Package tier puts a local counting
// gate in front, so that goroutines beyond the n leases wait in the
// process, not on ZooKeeper.
type Semaphore struct {
	s      *Session
	path   string
	n      int
	opts   []Option
	onLost func(node string, cause error)
	mutex  *Lock
	gate   chan struct{} // one slot: the holder of the mutex's Lock

	mu     sync.Mutex
	closed bool
	abort  context.CancelCauseFunc // ends the acquisition in progress (Close); nil when none
}

// NewSemaphore returns a semaphore of n leases at path.
func NewSemaphore(s *Session, path string, n int, opts ...Option) (*Semaphore, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: %d leases", ErrInvalidOption, n)
	}
	if err := ValidatePath(path); err != nil {
		return nil, err
	}
	m, err := New(s, path+semLocks, opts...)
	if err != nil {
		return nil, err
	}
	var cfg lockConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	return &Semaphore{s: s, path: path, n: n, opts: opts, onLost: cfg.onLost, mutex: m, gate: make(chan struct{}, 1)}, nil
}

// Path returns the semaphore's path.
func (sem *Semaphore) Path() string {
	if sem == nil {
		return ""
	}
	return sem.path
}

// Size returns n, the number of leases.
func (sem *Semaphore) Size() int {
	if sem == nil {
		return 0
	}
	return sem.n
}

// Acquire waits until k leases are held, ctx ends or an error that
// retrying cannot mend occurs. On an error no lease node of ours stays.
func (sem *Semaphore) Acquire(ctx context.Context, k int) (*Lease, error) {
	l, _, err := sem.acquire(ctx, k, true)
	return l, err
}

// TryAcquire takes k leases if they are free now, and never waits for a
// holder: it reports false, leaving no node behind, when fewer than k are
// free or another process is creating a lease.
func (sem *Semaphore) TryAcquire(ctx context.Context, k int) (*Lease, bool, error) {
	return sem.acquire(ctx, k, false)
}

func (sem *Semaphore) acquire(ctx context.Context, k int, wait bool) (*Lease, bool, error) {
	if sem == nil {
		return nil, false, errNil("Semaphore")
	}
	if ctx == nil {
		return nil, false, ErrNilContext
	}
	if k < 1 || k > sem.n {
		return nil, false, fmt.Errorf("%w: %d of %d", ErrInvalidPermits, k, sem.n)
	}
	if sem.s.f.Closed() {
		return nil, false, ErrSessionClosed
	}
	if wait {
		select {
		case sem.gate <- struct{}{}:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	} else {
		select {
		case sem.gate <- struct{}{}:
		default:
			return nil, false, nil
		}
	}
	defer func() { <-sem.gate }()
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	sem.mu.Lock()
	closed := sem.closed
	sem.abort = abort
	sem.mu.Unlock()
	if closed {
		return nil, false, ErrClosed
	}
	le, ok, err := sem.lease(ctx, k, wait)
	if err != nil && errors.Is(context.Cause(ctx), ErrClosed) {
		err = ErrClosed
	}
	return le, ok, err
}

// lease takes the mutex, then k lease nodes; the caller holds the gate.
func (sem *Semaphore) lease(ctx context.Context, k int, wait bool) (*Lease, bool, error) {
	mh, ok, err := sem.mutex.acquire(ctx, wait)
	if err != nil || !ok {
		return nil, false, err
	}
	// Released whatever happens; a loss of the mutex while we wait does not
	// matter for safety (the first-n rule needs no mutex), so its error is
	// not ours.
	defer func() { _ = mh.Release() }()

	le := &Lease{sem: sem, lost: make(chan struct{})}
	for range k {
		l, err := newRecipeLock(sem.s, sem.path+semLeases, leaseMarker, firstN(sem.n), parseLease,
			append(sem.opts[:len(sem.opts):len(sem.opts)], WithLossHandler(le.onLost))...)
		var h *Hold
		if err == nil {
			h, ok, err = l.acquire(ctx, wait)
		}
		if err != nil || !ok {
			if l != nil {
				_ = l.Close()
			}
			_ = le.Release()
			return nil, false, err
		}
		le.mu.Lock()
		le.locks, le.holds = append(le.locks, l), append(le.holds, h)
		le.mu.Unlock()
	}
	return le, true, nil
}

// Close ends an acquisition in progress (it returns ErrClosed, leaving no
// node) and closes the semaphore's mutex; later acquisitions return
// ErrClosed. Held leases stay until released.
func (sem *Semaphore) Close() error {
	if sem == nil {
		return errNil("Semaphore")
	}
	sem.mu.Lock()
	sem.closed = true
	if sem.abort != nil {
		sem.abort(ErrClosed)
	}
	sem.mu.Unlock()
	return sem.mutex.Close()
}

// Lease is k leases of a Semaphore, held until Release or a loss.
type Lease struct {
	sem      *Semaphore
	mu       sync.Mutex
	locks    []*Lock // one per lease node, released and closed by Release
	holds    []*Hold // their holds, in the same order
	lost     chan struct{}
	lostOnce sync.Once
	cause    error // written before lost closes
	released bool
}

func (le *Lease) onLost(node string, cause error) {
	le.lostOnce.Do(func() {
		le.cause = cause
		close(le.lost)
	})
	if le.sem.onLost != nil {
		le.sem.onLost(node, cause)
	}
}

// Lost returns a channel closed when any of the lease's nodes is lost (see
// Hold.Lost for the causes). It is not closed by Release.
func (le *Lease) Lost() <-chan struct{} {
	if le == nil {
		return closed.Chan
	}
	return le.lost
}

// Err returns why the lease was lost (wrapping ErrLockLost), or nil.
func (le *Lease) Err() error {
	if le == nil {
		return errNil("Lease")
	}
	le.judge()
	select {
	case <-le.lost:
		return fmt.Errorf("%w: %w", ErrLockLost, le.cause)
	default:
		return nil
	}
}

// judge judges each of the lease's holds at this moment (Hold.judge).
func (le *Lease) judge() {
	le.mu.Lock()
	holds := le.holds
	le.mu.Unlock()
	for _, h := range holds {
		h.judge()
	}
}

// Nodes returns the full paths of the lease's nodes.
func (le *Lease) Nodes() []string {
	if le == nil {
		return nil
	}
	le.mu.Lock()
	defer le.mu.Unlock()
	out := make([]string, 0, len(le.holds))
	for _, h := range le.holds {
		out = append(out, h.Node())
	}
	return out
}

// Token returns the fencing token of the lease's first node (see
// Hold.Token): increasing across the holders of that node's slot order.
func (le *Lease) Token() int64 {
	if le == nil {
		return 0
	}
	le.mu.Lock()
	defer le.mu.Unlock()
	if len(le.holds) == 0 {
		return 0
	}
	return le.holds[0].Token()
}

// Release gives the leases up (their deletes are guaranteed, as a Lock's
// release). A second Release returns ErrNotHeld; releasing a lost lease
// returns an error wrapping ErrLockLost.
func (le *Lease) Release() error {
	if le == nil {
		return errNil("Lease")
	}
	le.mu.Lock()
	if le.released {
		le.mu.Unlock()
		return ErrNotHeld
	}
	le.released = true
	locks, holds := le.locks, le.holds
	le.mu.Unlock()
	var errs []error
	for i, l := range locks {
		// Released before its lock is closed: Close would end the hold as
		// lost (ErrClosed).
		if err := holds[i].Release(); err != nil && !errors.Is(err, ErrLockLost) {
			errs = append(errs, err)
		}
		if err := l.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := le.Err(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
