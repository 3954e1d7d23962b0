package tier

import (
	"context"
	"sync/atomic"
)

// gate is tier 1: a one-slot channel, held by whoever put the token in.
//
// A channel rather than a sync.Mutex because every wait must be abandonable
// through a context and a try must never block. Waiters blocked in enter
// are served in the order they blocked: Go queues a channel's blocked
// senders first in, first out, and leave hands the slot straight to the
// first of them (the receive moves its token into the buffer), so a
// goroutine arriving at that moment cannot barge ahead. A goroutine that
// arrives while the gate is free takes it at once.
type gate struct {
	slot    chan struct{}
	waiting atomic.Int32 // goroutines blocked in enter
}

func newGate() *gate { return &gate{slot: make(chan struct{}, 1)} }

func (g *gate) tryEnter() bool {
	select {
	case g.slot <- struct{}{}:
		return true
	default:
		return false
	}
}

// enter waits for the gate until ctx ends or closed is closed.
func (g *gate) enter(ctx context.Context, closed <-chan struct{}) error {
	if g.tryEnter() {
		return nil
	}
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	select {
	case g.slot <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-closed:
		return ErrClosed
	}
}

func (g *gate) leave() { <-g.slot }

// waiters reports how many goroutines are blocked in enter.
func (g *gate) waiters() int32 { return g.waiting.Load() }
