package worker

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/record"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// tierRecipeOptions are the options of the tier recipes' locks (they log
// through the worker's session).
func tierRecipeOptions(task proto.Task, _ *slog.Logger) []tier.Option {
	return []tier.Option{tier.WithLockOptions(zklock.WithLabel(fmt.Sprintf("stress worker %d", task.Proc)))}
}

// tierRWImpl is tier's read/write lock: one tier.RWLock per path per
// process, shared by all goroutines (strict: RWLock has no hand-off); the
// close fault replaces them while goroutines acquire them (lockSet).
type tierRWImpl struct {
	s *zklock.Session
	*lockSet[*tier.RWLock]
}

func newTierRWImpl(s *zklock.Session, task proto.Task, log *slog.Logger) (*tierRWImpl, error) {
	ls, err := newLockSet(func() ([]*tier.RWLock, error) {
		return makeEach(task.Paths, func(p string) (*tier.RWLock, error) {
			return tier.NewRWLock(s, p, tierRecipeOptions(task, log)...)
		})
	})
	if err != nil {
		return nil, err
	}
	return &tierRWImpl{s: s, lockSet: ls}, nil
}

func (im *tierRWImpl) tokenKind() string        { return "zxid" }
func (im *tierRWImpl) session() *zklock.Session { return im.s }

func (im *tierRWImpl) holder(int) holder {
	n := im.len()
	return &tierRWHolder{ls: im.lockSet, used: make([]*tier.RWLock, n), held: make([]context.Context, n)}
}

func (im *tierRWImpl) close() error {
	im.lockSet.close()
	return im.s.Close()
}

// tierRWHolder keeps the held context of the one path a goroutine holds,
// and the lock it holds it from.
type tierRWHolder struct {
	ls   *lockSet[*tier.RWLock]
	used []*tier.RWLock
	held []context.Context
}

// acquire is a write.
func (h *tierRWHolder) acquire(ctx context.Context, p int) (int64, error) {
	return h.acquireKind(ctx, p, record.Kind{})
}

// acquireKind takes the read lock (k.Shared) or the write lock of path p;
// the token is the node's zxid (for a read, the read node it rides on).
func (h *tierRWHolder) acquireKind(ctx context.Context, p int, k record.Kind) (int64, error) {
	for {
		l := h.ls.get(p)
		take := l.Lock
		if k.Shared {
			take = l.RLock
		}
		held, err := take(ctx)
		if err == nil {
			var tok int64
			if tok, err = l.Token(held); err == nil {
				h.used[p], h.held[p] = l, held
				return tok, nil
			}
			l.Release(held)
			err = fmt.Errorf("token: %w", err)
		}
		if !h.ls.retry(l, err) {
			return 0, err
		}
	}
}

// lost: the held context is cancelled when the hold is lost.
func (h *tierRWHolder) lost(p int) (<-chan struct{}, func() error) {
	held := h.held[p]
	return held.Done(), func() error { return context.Cause(held) }
}

func (h *tierRWHolder) release(p int) error {
	l, held := h.used[p], h.held[p]
	h.used[p], h.held[p] = nil, nil
	if err := l.Release(held); !h.ls.retry(l, err) {
		return err
	}
	return nil // the close fault ended the hold: its Close released it
}

// tierSemImpl is tier's semaphore: one tier.Semaphore of task.Leases
// leases per path per process, shared by all goroutines; the close fault
// replaces them while goroutines acquire them (lockSet).
type tierSemImpl struct {
	s *zklock.Session
	*lockSet[*tier.Semaphore]
}

func newTierSemImpl(s *zklock.Session, task proto.Task, log *slog.Logger) (*tierSemImpl, error) {
	ls, err := newLockSet(func() ([]*tier.Semaphore, error) {
		return makeEach(task.Paths, func(p string) (*tier.Semaphore, error) {
			return tier.NewSemaphore(s, p, task.Leases, tierRecipeOptions(task, log)...)
		})
	})
	if err != nil {
		return nil, err
	}
	return &tierSemImpl{s: s, lockSet: ls}, nil
}

func (im *tierSemImpl) tokenKind() string        { return "zxid" }
func (im *tierSemImpl) session() *zklock.Session { return im.s }

func (im *tierSemImpl) holder(int) holder {
	n := im.len()
	return &tierSemHolder{ls: im.lockSet, used: make([]*tier.Semaphore, n), held: make([]context.Context, n)}
}

func (im *tierSemImpl) close() error {
	im.lockSet.close()
	return im.s.Close()
}

// tierSemHolder keeps the held context of the one path a goroutine holds,
// and the semaphore it holds it from.
type tierSemHolder struct {
	ls   *lockSet[*tier.Semaphore]
	used []*tier.Semaphore
	held []context.Context
}

// acquire takes one permit.
func (h *tierSemHolder) acquire(ctx context.Context, p int) (int64, error) {
	return h.acquireKind(ctx, p, record.Kind{Permits: 1})
}

// acquireKind takes k.Permits permits (at least one) of path p's
// semaphore; the token is its first lease node's zxid.
func (h *tierSemHolder) acquireKind(ctx context.Context, p int, k record.Kind) (int64, error) {
	for {
		sem := h.ls.get(p)
		held, err := sem.Acquire(ctx, max(1, int(k.Permits)))
		if err == nil {
			var tok int64
			if tok, err = sem.Token(held); err == nil {
				h.used[p], h.held[p] = sem, held
				return tok, nil
			}
			sem.Release(held)
			err = fmt.Errorf("token: %w", err)
		}
		if !h.ls.retry(sem, err) {
			return 0, err
		}
	}
}

// lost: the held context is cancelled when any of its lease nodes is lost.
func (h *tierSemHolder) lost(p int) (<-chan struct{}, func() error) {
	held := h.held[p]
	return held.Done(), func() error { return context.Cause(held) }
}

func (h *tierSemHolder) release(p int) error {
	sem, held := h.used[p], h.held[p]
	h.used[p], h.held[p] = nil, nil
	if err := sem.Release(held); !h.ls.retry(sem, err) {
		return err
	}
	return nil // the close fault ended the hold: its Close released it
}
