package zklock

import (
	"errors"
	"path"

	"github.com/tierlock/tierlock/internal/mutant"
)

// The seeded bugs (package internal/mutant): each is called from one
// branch guarded by mutant.On, compiled in only with the tierlockmutants
// build tag. Without it nothing here is reachable, and the linker drops it.

// errNotListed is listBehind's answer under the grant-before-listing bug:
// the listing was not waited for.
var errNotListed = errors.New("zklock: mutant: listing not waited for")

// leadAtOnce is the grant-before-listing bug: our node, created, is taken
// to lead without the listing's answer (the queue is our node alone). The
// token is the node's creation zxid, read by an exists, so that tokens
// still grow and what the checks meet is the overlap itself.
func (l *Lock) leadAtOnce(n *ourNode) {
	if n.node == "" || n.q != nil {
		return
	}
	_, st, err := l.s.conn.Exists(n.node)
	if err != nil || st == nil {
		return // n.q stays nil: waitTurn lists
	}
	n.q, n.pzxid = l.sortQueue([]string{path.Base(n.node)}), st.Czxid
}

// wrongDelete is the delete-wrong-create bug: the create carries the
// delete of the wrong node, the queue's first that is not the released one
// (stale's): another process's, holding or next to hold, in place of
// stale, which is deleted on its own.
func (l *Lock) wrongDelete(stale *pendingDelete) *pendingDelete {
	s := l.s
	children, _, err := s.conn.Children(l.path)
	if err != nil {
		return stale
	}
	for _, e := range l.sortQueue(children) {
		victim := l.path + "/" + e.name
		if stale != nil && victim == stale.node {
			continue
		}
		if stale != nil {
			s.deleteInBackground(stale.node, stale.owner)
		}
		return &pendingDelete{path: l.path, node: victim, owner: s.conn.SessionID()}
	}
	return stale
}

// grantsEarly is the watch-grants-early bug: the predecessor's watch fired
// (sleep dropped it; a re-check keeps it), and the waiter goes on as
// leading without reading the queue again, with the token of the listing
// that found it waiting.
func (w *waiter) grantsEarly() bool {
	return mutant.On(mutant.WatchGrantsEarly) && w.watched == ""
}
