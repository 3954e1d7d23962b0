package gocronlock

import "sync"

// notifier calls the Elector's leader handler on a goroutine of its own.
// The campaign goroutine, which Close waits for, only posts the changes;
// were it to call the handler, a handler calling Close would wait for
// itself (TestElectorCloseFromHandler). So Close waits for the library's goroutine
// and never for user code.
//
// The changes are delivered one at a time, in the order posted. Close
// first marks the notifier closed (under mu); a delivery is decided under
// mu too, so a handler call started after close has returned is only the
// final one: false, when the handler's last call was true, made once the
// campaign goroutine has returned (it posts nothing after that).
type notifier struct {
	fn   func(leading bool)
	wake chan struct{} // 1 slot: something was posted

	mu     sync.Mutex
	queue  []bool
	closed bool // Close was called: no more deliveries but the final one
	told   bool // the handler's last call was with true
}

func newNotifier(fn func(bool)) *notifier {
	return &notifier{fn: fn, wake: make(chan struct{}, 1)}
}

// post queues a change; it never blocks.
func (n *notifier) post(leading bool) {
	n.mu.Lock()
	n.queue = append(n.queue, leading)
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// close stops the deliveries but the final one.
func (n *notifier) close() {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
}

// run delivers the changes until campaignDone is closed, then the ones
// left (all, or after close only the final false), and returns.
func (n *notifier) run(campaignDone <-chan struct{}) {
	for {
		select {
		case <-n.wake:
			n.deliver()
		case <-campaignDone:
			n.deliver()
			n.mu.Lock()
			final := n.told
			n.told = false
			n.mu.Unlock()
			if final {
				n.fn(false)
			}
			return
		}
	}
}

// deliver calls the handler with each queued change, in order, until the
// queue is empty or the notifier is closed.
func (n *notifier) deliver() {
	for {
		n.mu.Lock()
		if n.closed || len(n.queue) == 0 {
			n.mu.Unlock()
			return
		}
		leading := n.queue[0]
		n.queue = n.queue[1:]
		n.told = leading
		n.mu.Unlock()
		n.fn(leading)
	}
}
