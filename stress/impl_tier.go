package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// tierImpl is what tierlock offers: one tier.Lock per path per process,
// shared by all goroutines, optionally with bounded local hand-off.
type tierImpl struct {
	s     *zklock.Session
	locks []*tier.Lock
}

func newTierImpl(s *zklock.Session, spec workerSpec, log *slog.Logger) (*tierImpl, error) {
	opts := []tier.Option{
		tier.WithLogger(log),
		tier.WithLockOptions(zklock.WithLabel(fmt.Sprintf("stress worker %d", spec.Proc))),
	}
	if spec.Impl == implTierHandoff {
		opts = append(opts, tier.WithHandoff(spec.HandoffMax, spec.HandoffMaxHold))
	}
	im := &tierImpl{s: s}
	for _, p := range spec.Paths {
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
