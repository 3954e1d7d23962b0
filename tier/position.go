package tier

import "github.com/tierlock/tierlock/zklock"

// WithPositionHandler tells fn where this process's node stands in the
// ZooKeeper queue while an acquisition waits for it (see
// zklock.WithPositionHandler: when it is told, what it costs, which is no
// request).
//
// The position is the process's, not the goroutine's: goroutines of this
// process first wait at the local gate, and only the one that passes it
// queues a node in ZooKeeper. So fn runs on the goroutine past the gate,
// inside its Acquire, for as long as it waits in ZooKeeper; goroutines
// still at the gate are told nothing (Ahead counts other processes' nodes,
// never goroutines of this one), and a hold passed on by a local hand-off
// (WithHandoff) queues no node and is told nothing. TryAcquire, which
// never waits, is told nothing. A nil fn reports nothing.
//
// It is WithLockOptions(zklock.WithPositionHandler(fn)), and applies to
// Lock, RWLock and Semaphore alike.
func WithPositionHandler(fn func(zklock.Position)) Option {
	return WithLockOptions(zklock.WithPositionHandler(fn))
}
