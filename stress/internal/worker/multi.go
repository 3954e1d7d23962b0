package worker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/record"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// multiSet is the set of paths a multi-lock hold on picked path p covers:
// p and the next Members-1 paths, wrapping around, so sets drawn at
// different p overlap in every way. p comes first (the loop records it
// like any hold); the other members follow.
func multiSet(task proto.Task, p int) []int {
	n := len(task.Paths)
	set := make([]int, task.Members)
	for i := range set {
		set[i] = (p + i) % n
	}
	return set
}

// memberSlots are the records of a multi-lock hold's members other than
// the picked path.
type memberSlots []record.Slot

func (s memberSlots) exit(at int64) {
	for _, sl := range s {
		sl.Exit(at)
	}
}

// memberTokener is a holder that knows the fencing token of each member of
// its hold on p, in multiSet order.
type memberTokener interface{ memberTokens(p int) []int64 }

// enterMembers records the members of a multi-lock hold on p other than p
// itself (nothing for other recipes), each with its own token, so that the
// checker checks exclusion and tokens on every path a hold covers.
func (w *worker) enterMembers(h holder, enter int64, latency time.Duration, g, p int, kind record.Kind) (memberSlots, error) {
	if w.task.Recipe != proto.Multi {
		return nil, nil
	}
	set := multiSet(w.task, p)
	var toks []int64
	if mt, ok := h.(memberTokener); ok {
		toks = mt.memberTokens(p)
	}
	slots := make(memberSlots, 0, len(set)-1)
	for i, q := range set[1:] {
		var tok int64
		if toks != nil {
			tok = toks[i+1]
		}
		slot, err := w.rec.EnterKind(enter, tok, int64(latency), int32(g), int32(q), kind)
		if err != nil {
			slots.exit(enter) // no hold is left open in the records
			return nil, err
		}
		slots = append(slots, slot)
	}
	return slots, nil
}

// newMultiImpl makes the implementation of a multi-lock run: tier's
// MultiLock over one tier.Lock per path per process, or nolock.
func newMultiImpl(ctx context.Context, task proto.Task, log *slog.Logger, events *sessionEvents) (impl, error) {
	switch task.Impl {
	case proto.Tier:
		s, err := zklock.Connect(ctx, task.Servers, sessionOptions(task, log, events.listen)...)
		if err != nil {
			return nil, err
		}
		locks, err := newTierImpl(s, task, log)
		if err != nil {
			s.Close()
			return nil, err
		}
		im := &tierMultiImpl{tierImpl: locks, task: task}
		for p := range task.Paths {
			// Given in reverse, so that the sort has work to do.
			set := multiSet(task, p)
			members := make([]tier.Member, len(set))
			for i, q := range set {
				members[len(set)-1-i] = locks.get(q)
			}
			m, err := tier.NewMultiLock(members...)
			if err != nil {
				locks.close()
				return nil, err
			}
			im.multis = append(im.multis, m)
		}
		return im, nil
	case proto.Nolock:
		return nolockImpl{}, nil
	}
	return nil, fmt.Errorf("implementation %q has no %s recipe", task.Impl, task.Recipe)
}

// tierMultiImpl is tier.MultiLock: one multi-lock per picked path, over
// the process's tier.Lock of each path (shared by all goroutines, strict).
type tierMultiImpl struct {
	*tierImpl
	task   proto.Task
	multis []*tier.MultiLock
}

func (im *tierMultiImpl) holder(int) holder {
	return &tierMultiHolder{im: im, held: make([]context.Context, len(im.multis)), toks: make([][]int64, len(im.multis))}
}

// tierMultiHolder keeps the held context and member tokens of the one
// multi-lock hold a goroutine has.
type tierMultiHolder struct {
	im   *tierMultiImpl
	held []context.Context
	toks [][]int64
}

// acquire takes the multi-lock of picked path p; the token returned is p's.
func (h *tierMultiHolder) acquire(ctx context.Context, p int) (int64, error) {
	m := h.im.multis[p]
	held, err := m.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	byPath, err := m.Tokens(held)
	if err != nil {
		m.Release(held)
		return 0, fmt.Errorf("tokens: %w", err)
	}
	set := multiSet(h.im.task, p)
	toks := make([]int64, len(set))
	for i, q := range set {
		toks[i] = byPath[h.im.task.Paths[q]]
	}
	h.held[p], h.toks[p] = held, toks
	return toks[0], nil
}

func (h *tierMultiHolder) memberTokens(p int) []int64 { return h.toks[p] }

// lost: the held context ends when any member's hold does.
func (h *tierMultiHolder) lost(p int) (<-chan struct{}, func() error) {
	held := h.held[p]
	return held.Done(), func() error { return context.Cause(held) }
}

func (h *tierMultiHolder) release(p int) error {
	held := h.held[p]
	h.held[p], h.toks[p] = nil, nil
	return h.im.multis[p].Release(held)
}

// reopen is refused: a multi-lock's members are fixed at its making.
func (im *tierMultiImpl) reopen() error { return errNoReopen }
