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
// local hand-off.
type tierImpl struct {
	s     *zklock.Session
	locks []*tier.Lock
}

// newTierImpl makes the tier implementation's locks, with extra options
// (tier-handoff's).
func newTierImpl(s *zklock.Session, task proto.Task, log *slog.Logger, extra ...tier.Option) (*tierImpl, error) {
	opts := append([]tier.Option{
		tier.WithLockOptions(zklock.WithLabel(fmt.Sprintf("stress worker %d", task.Proc))),
	}, extra...)
	im := &tierImpl{s: s}
	for _, p := range task.Paths {
		l, err := tier.New(s, p, opts...)
		if err != nil {
			im.close()
			return nil, err
		}
		im.locks = append(im.locks, l)
	}
	return im, nil
}

func (im *tierImpl) tokenKind() string { return "zxid" }

func (im *tierImpl) session() *zklock.Session { return im.s }

func (im *tierImpl) holder(int) holder {
	return &tierHolder{locks: im.locks, held: make([]context.Context, len(im.locks))}
}

func (im *tierImpl) close() error {
	for _, l := range im.locks {
		l.Close()
	}
	return im.s.Close()
}

// tierHolder keeps the held context of the one path a goroutine holds.
type tierHolder struct {
	locks []*tier.Lock
	held  []context.Context
}

func (h *tierHolder) acquire(ctx context.Context, p int) (int64, error) {
	held, err := h.locks[p].Acquire(ctx)
	if err != nil {
		return 0, err
	}
	tok, err := h.locks[p].Token(held)
	if err != nil {
		h.locks[p].Release(held)
		return 0, fmt.Errorf("token: %w", err)
	}
	h.held[p] = held
	return tok, nil
}

// lost: the held context is cancelled when the hold is lost, with the
// cause (wrapping tier.ErrLockLost).
func (h *tierHolder) lost(p int) (<-chan struct{}, func() error) {
	held := h.held[p]
	return held.Done(), func() error { return context.Cause(held) }
}

func (h *tierHolder) release(p int) error {
	held := h.held[p]
	h.held[p] = nil
	return h.locks[p].Release(held)
}
