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
func tierRecipeOptions(task proto.Task, _ *slog.Logger) []zklock.Option {
	return []zklock.Option{zklock.WithLabel(fmt.Sprintf("stress worker %d", task.Proc))}
}

// tierRWImpl is tier's read/write lock: one tier.RWLock per path per
// process, shared by all goroutines (strict: RWLock has no hand-off).
type tierRWImpl struct {
	s     *zklock.Session
	locks []*tier.RWLock
}

func newTierRWImpl(s *zklock.Session, task proto.Task, log *slog.Logger) (*tierRWImpl, error) {
	im := &tierRWImpl{s: s}
	for _, p := range task.Paths {
		l, err := tier.NewRWLock(s, p, tierRecipeOptions(task, log)...)
		if err != nil {
			for _, l := range im.locks {
				l.Close()
			}
			return nil, err
		}
		im.locks = append(im.locks, l)
	}
	return im, nil
}

func (im *tierRWImpl) tokenKind() string        { return "zxid" }
func (im *tierRWImpl) session() *zklock.Session { return im.s }

func (im *tierRWImpl) holder(int) holder {
	return &tierRWHolder{locks: im.locks, held: make([]context.Context, len(im.locks)), write: make([]bool, len(im.locks))}
}

func (im *tierRWImpl) close() error {
	for _, l := range im.locks {
		l.Close()
	}
	return im.s.Close()
}

// tierRWHolder keeps the held context of the one path a goroutine holds
// and whether it is a write.
type tierRWHolder struct {
	locks []*tier.RWLock
	held  []context.Context
	write []bool
}

// acquire is a write.
func (h *tierRWHolder) acquire(ctx context.Context, p int) (int64, error) {
	return h.acquireKind(ctx, p, record.Kind{})
}

// acquireKind takes the read lock (k.Shared) or the write lock of path p;
// the token is the node's zxid (for a read, the read node it rides on).
func (h *tierRWHolder) acquireKind(ctx context.Context, p int, k record.Kind) (int64, error) {
	l := h.locks[p]
	take, undo := l.Lock, l.Release
	if k.Shared {
		take = l.RLock
	}
	held, err := take(ctx)
	if err != nil {
		return 0, err
	}
	tok, err := l.Token(held)
	if err != nil {
		undo(held)
		return 0, fmt.Errorf("token: %w", err)
	}
	h.held[p], h.write[p] = held, !k.Shared
	return tok, nil
}

// lost: the held context is cancelled when the hold is lost.
func (h *tierRWHolder) lost(p int) (<-chan struct{}, func() error) {
	held := h.held[p]
	return held.Done(), func() error { return context.Cause(held) }
}

func (h *tierRWHolder) release(p int) error {
	held := h.held[p]
	h.held[p] = nil
	return h.locks[p].Release(held)
}

// tierSemImpl is tier's semaphore: one tier.Semaphore of task.Leases
// leases per path per process, shared by all goroutines.
type tierSemImpl struct {
	s    *zklock.Session
	sems []*tier.Semaphore
}

func newTierSemImpl(s *zklock.Session, task proto.Task, log *slog.Logger) (*tierSemImpl, error) {
	im := &tierSemImpl{s: s}
	for _, p := range task.Paths {
		sem, err := tier.NewSemaphore(s, p, task.Leases, tierRecipeOptions(task, log)...)
		if err != nil {
			for _, sem := range im.sems {
				sem.Close()
			}
			return nil, err
		}
		im.sems = append(im.sems, sem)
	}
	return im, nil
}

func (im *tierSemImpl) tokenKind() string        { return "zxid" }
func (im *tierSemImpl) session() *zklock.Session { return im.s }

func (im *tierSemImpl) holder(int) holder {
	return &tierSemHolder{sems: im.sems, held: make([]context.Context, len(im.sems))}
}

func (im *tierSemImpl) close() error {
	for _, sem := range im.sems {
		sem.Close()
	}
	return im.s.Close()
}

// tierSemHolder keeps the held context of the one path a goroutine holds.
type tierSemHolder struct {
	sems []*tier.Semaphore
	held []context.Context
}

// acquire takes one permit.
func (h *tierSemHolder) acquire(ctx context.Context, p int) (int64, error) {
	return h.acquireKind(ctx, p, record.Kind{Permits: 1})
}

// acquireKind takes k.Permits permits (at least one) of path p's
// semaphore; the token is its first lease node's zxid.
func (h *tierSemHolder) acquireKind(ctx context.Context, p int, k record.Kind) (int64, error) {
	sem := h.sems[p]
	held, err := sem.Acquire(ctx, max(1, int(k.Permits)))
	if err != nil {
		return 0, err
	}
	tok, err := sem.Token(held)
	if err != nil {
		sem.Release(held)
		return 0, fmt.Errorf("token: %w", err)
	}
	h.held[p] = held
	return tok, nil
}

// lost: the held context is cancelled when any of its lease nodes is lost.
func (h *tierSemHolder) lost(p int) (<-chan struct{}, func() error) {
	held := h.held[p]
	return held.Done(), func() error { return context.Cause(held) }
}

func (h *tierSemHolder) release(p int) error {
	held := h.held[p]
	h.held[p] = nil
	return h.sems[p].Release(held)
}
