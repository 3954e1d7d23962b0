package tier

import "time"

// The bounded local hand-off (WithHandoff): when a release may pass the
// gate, and the node with it, to a local waiter.

// settled waits, before a hand-off, until the releasing hold's guarded
// writes in flight are over: the next holder rides on the same node, so
// the server's guard cannot tell its writes from the previous holder's
// (see txnGate). It reports whether the hand-off is still allowed. A loss
// of the node ends the wait: the next holder will not ride on it.
func (l *Lock) settled(txnsOver <-chan struct{}) bool {
	select {
	case <-txnsOver:
	case <-l.zkHold.Lost():
	}
	return l.handoffAllowed()
}

func (l *Lock) handoffAllowed() bool {
	if l.cfg.maxHandoffs == 0 || l.zkHold == nil || l.g.waiters() == 0 || l.life.isClosed() {
		return false
	}
	if l.handoffs >= l.cfg.maxHandoffs || time.Since(l.zkSince) >= l.cfg.maxHold {
		return false
	}
	select {
	case <-l.zkHold.Lost():
		return false
	case <-l.zkHold.Revoked():
		return false // a revoked node goes back to ZooKeeper
	default:
		return true
	}
}
