package session

import "sync"

// notifier delivers state changes to the user's listener in order, from
// its own goroutine, so that user code never runs where state is tracked.
type notifier struct {
	fn    func(int)
	mu    sync.Mutex
	queue []int
	wake  chan struct{}
	done  chan struct{}

	closeOnce sync.Once
}

func (n *notifier) init(fn func(int)) {
	n.fn, n.wake, n.done = fn, make(chan struct{}, 1), make(chan struct{})
}

func (n *notifier) push(st int) {
	if n.fn == nil {
		return
	}
	n.mu.Lock()
	n.queue = append(n.queue, st)
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

func (n *notifier) close() { n.closeOnce.Do(func() { close(n.done) }) }

func (n *notifier) run() {
	for {
		n.mu.Lock()
		q := n.queue
		n.queue = nil
		n.mu.Unlock()
		for _, st := range q {
			n.fn(st)
		}
		select {
		case <-n.wake:
		case <-n.done:
			// Deliver what came before the close (StateClosed included).
			n.mu.Lock()
			q := n.queue
			n.queue = nil
			n.mu.Unlock()
			for _, st := range q {
				n.fn(st)
			}
			return
		}
	}
}
