package tier

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// gate is tier 1: the process-local lock in front of the ZooKeeper lock.
//
// Its fast paths are one atomic compare-and-swap, close to a sync.Mutex;
// its waits are channels, so every wait can be abandoned through a context
// and a try never blocks, which a sync.Mutex cannot offer. Waiters are
// served in the order they started to wait: leave hands the gate straight
// to the first of them (the state stays held, so no one can slip in
// between). A goroutine that arrives while the gate is free takes it at
// once, before spinning briefly and then queueing.
type gate struct {
	state   atomic.Int32 // 0 free, 1 held
	waiting atomic.Int32 // len(queue), readable without mu

	mu    sync.Mutex
	queue []chan struct{} // closed to hand the gate to that waiter
}

// spins is how many times enter yields and retries before it queues: a
// short hold ends sooner than a park and wake-up take.
const spins = 4

func newGate() *gate { return &gate{} }

func (g *gate) tryEnter() bool { return g.state.CompareAndSwap(0, 1) }

// enter waits for the gate until ctx ends or closed is closed.
func (g *gate) enter(ctx context.Context, closed <-chan struct{}) error {
	if g.tryEnter() {
		return nil
	}
	for i := 0; i < spins && g.waiting.Load() == 0; i++ {
		runtime.Gosched()
		if g.tryEnter() {
			return nil
		}
	}
	g.mu.Lock()
	g.waiting.Add(1)
	if g.tryEnter() { // freed while we took mu
		g.waiting.Add(-1)
		g.mu.Unlock()
		return nil
	}
	ready := make(chan struct{})
	g.queue = append(g.queue, ready)
	g.mu.Unlock()

	var err error
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-closed:
		err = ErrClosed
	}
	g.mu.Lock()
	select {
	case <-ready:
		// Handed to us as we gave up: pass it on.
		g.mu.Unlock()
		g.leave()
		return err
	default:
	}
	for i, c := range g.queue {
		if c == ready {
			g.queue = append(g.queue[:i], g.queue[i+1:]...)
			g.waiting.Add(-1)
			break
		}
	}
	g.mu.Unlock()
	return err
}

func (g *gate) leave() {
	if g.waiting.Load() == 0 {
		g.state.Store(0)
		if g.waiting.Load() == 0 {
			return
		}
		// A waiter queued meanwhile: take the gate back to hand it over,
		// unless a newcomer already took it (it will hand over instead).
		if !g.tryEnter() {
			return
		}
	}
	g.mu.Lock()
	if len(g.queue) == 0 {
		g.state.Store(0)
		g.mu.Unlock()
		return
	}
	next := g.queue[0]
	g.queue[0] = nil
	g.queue = g.queue[1:]
	g.waiting.Add(-1)
	if testHookHandover != nil {
		testHookHandover()
	}
	// The state stays held: ownership passes to next. The close must happen
	// before mu is released. A waiter whose context ends takes mu to leave
	// the queue; holding mu here, we make it see either its channel closed
	// (it owns the gate and passes it on) or itself still queued (it leaves,
	// and we hand the gate to someone else). Closing after the unlock lets
	// it see neither: it would return its context's error while the close
	// reaches nobody, leaving the gate held by no goroutine, forever.
	close(next)
	g.mu.Unlock()
}

// testHookHandover, when set by a test, runs in leave after the first
// waiter was chosen and before the gate is handed to it.
var testHookHandover func()

// waiters reports how many goroutines are queued in enter.
func (g *gate) waiters() int32 { return g.waiting.Load() }
