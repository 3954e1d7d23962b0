package worker

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// tierImpl is what tierlock offers (tier, and tier-handoff): one tier.Lock
// per path per process, shared by all goroutines, optionally with bounded
// local hand-off. The close fault replaces the locks while goroutines
// acquire them (lockSet).
type tierImpl struct {
	s *zklock.Session
	*lockSet[*tier.Lock]
}

// newTierImpl makes the tier implementation's locks, with extra options
// (tier-handoff's).
func newTierImpl(s *zklock.Session, task proto.Task, log *slog.Logger, extra ...tier.Option) (*tierImpl, error) {
	opts := append([]tier.Option{
		tier.WithLockOptions(zklock.WithLabel(fmt.Sprintf("stress worker %d", task.Proc))),
	}, extra...)
	ls, err := newLockSet(func() ([]*tier.Lock, error) {
		return makeEach(task.Paths, func(p string) (*tier.Lock, error) { return tier.New(s, p, opts...) })
	})
	if err != nil {
		s.Close()
		return nil, err
	}
	return &tierImpl{s: s, lockSet: ls}, nil
}

func (im *tierImpl) tokenKind() string { return "zxid" }

func (im *tierImpl) session() *zklock.Session { return im.s }

func (im *tierImpl) holder(int) holder {
	n := im.len()
	return &tierHolder{im: im, used: make([]*tier.Lock, n), held: make([]context.Context, n)}
}

func (im *tierImpl) close() error {
	im.lockSet.close()
	return im.s.Close()
}

// tierHolder keeps the held context of the one path a goroutine holds, and
// the lock it holds it from.
type tierHolder struct {
	im   *tierImpl
	used []*tier.Lock
	held []context.Context
}

func (h *tierHolder) acquire(ctx context.Context, p int) (int64, error) {
	for {
		l := h.im.get(p)
		held, err := l.Acquire(ctx)
		if err != nil {
			if h.im.retry(l, err) {
				continue
			}
			return 0, err
		}
		tok, err := l.Token(held)
		if err != nil {
			l.Release(held)
			if h.im.retry(l, err) {
				continue
			}
			return 0, fmt.Errorf("token: %w", err)
		}
		h.used[p], h.held[p] = l, held
		return tok, nil
	}
}

// lost: the held context is cancelled when the hold is lost, with the
// cause (wrapping tier.ErrLockLost), or when the close fault closes its
// lock (tier.ErrClosed).
func (h *tierHolder) lost(p int) (<-chan struct{}, func() error) {
	held := h.held[p]
	return held.Done(), func() error { return context.Cause(held) }
}

func (h *tierHolder) release(p int) error {
	l, held := h.used[p], h.held[p]
	h.used[p], h.held[p] = nil, nil
	err := l.Release(held)
	if h.im.retry(l, err) {
		return nil // the close fault ended the hold: its Close released it
	}
	return err
}
