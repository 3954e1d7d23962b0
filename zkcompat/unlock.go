package zkcompat

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// Unlock releases the hold and, as zk.Lock's does, returns once the
// server has answered the delete of the lock's node: when it returns nil,
// the node is gone. It returns zk.ErrNotLocked without a hold, an error
// wrapping tier.ErrLockLost if the hold was lost (at once: the node went
// with the loss, or goes in the background) and, as zk.Lock's does, an
// error wrapping zk.ErrNoNode (and tier.ErrLockLost) if the node was
// deleted by someone else while held, and the error of a delete that
// failed, wrapped (zk.ErrNoAuth, zk.ErrConnectionClosed,
// zk.ErrNoServer, ...). In every case the handle is released and can lock
// again; a node whose delete failed is deleted in the background, retried
// until it or its session is gone.
func (l *Lock) Unlock() error {
	if l == nil {
		return zk.ErrNotLocked
	}
	l.mu.Lock()
	if l.state != holding {
		l.mu.Unlock()
		return zk.ErrNotLocked
	}
	h := l.h
	l.state, l.h = idle, nil
	l.mu.Unlock()

	h.releasing.Store(true)
	h.stop()
	// Our delete first, answered before the shared lock releases the node
	// (below): its zk.ErrNoNode can then only mean that someone else
	// deleted the node, or its session ended; the release's own delete,
	// sent after, finds the node gone.
	delErr := deleteNode(l.conn, h.node)
	err := h.e.l.Release(h.held) // a loss the lock knew of comes first
	h.e.done()
	if err != nil {
		return err
	}
	return delErr
}

// zk.Lock's Unlock sends the delete of its node and returns the answer:
// once it returns, the node is gone (or the error says why not), and
// zk.ErrNoNode says that someone else deleted it while it was held. The
// shared lock's Release does not wait: zklock deletes the node in the
// background, guaranteed (retried until the node or its session is gone)
// but never reported. So Unlock sends the delete itself, through the
// caller's connection, and waits for the answer before it releases the
// shared lock: the release's delete, sent after, finds the node gone, and
// our delete's zk.ErrNoNode is a loss that nobody else saw (a hold
// younger than the own-node watch's delay has no watch). That costs one
// request more than zk.Lock per Unlock (the release's delete), and the
// process's next waiter passes the gate one round trip later than it would
// if the two deletes went together.

// Unlock knows its node by the shared lock's position reports: the
// acquisition past the lock's gate (one at a time per path) is told where
// its node stands, the last report of a successful one saying that it
// leads (zklock.WithPositionHandler), on the acquiring goroutine.

// onPosition is the shared lock's position handler: it records the node
// that leads, which the handle whose Acquire this is takes once Acquire
// returns (takeLeader). It runs on the acquiring goroutine, the one past
// the lock's gate, so no other acquisition records a node before the
// handle has taken its own.
func (e *pathEntry) onPosition(p zklock.Position) {
	if p.Leads {
		e.leader.Store(&p.Node)
	}
}

// takeLeader returns the node recorded for the acquisition that has just
// returned, and forgets it, so that it is never taken for another one's.
// It returns "" when none was recorded.
func (e *pathEntry) takeLeader() string {
	if p := e.leader.Swap(nil); p != nil && strings.HasPrefix(*p, e.path+"/") {
		return *p
	}
	return ""
}

// deleteNode deletes node, held until now by Unlock's handle, and returns
// once the server has answered: nil when this request deleted it; an error
// wrapping tier.ErrLockLost and zk.ErrNoNode when it was gone already
// (deleted by someone else, or gone with its session: the lock was lost
// while held); or the error of the delete, wrapped (the delete refused,
// zk.ErrNoAuth; the connection lost, zk.ErrConnectionClosed or
// zk.ErrNoServer), zklock's background delete retrying then. An empty node
// (none recorded) is nil at once.
func deleteNode(conn *zk.Conn, node string) error {
	if node == "" {
		return nil
	}
	err := conn.Delete(node, -1)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("zkcompat: unlock: node %s was gone: %w: %w", node, tier.ErrLockLost, err)
	}
	return fmt.Errorf("zkcompat: unlock: delete %s: %w", node, err)
}
