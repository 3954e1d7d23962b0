package replay

import (
	"path"
	"strings"
)

// Recipes outside twotier.pml. The model has one rule, the mutex's: a
// node goes when it is the first of its path's queue, and a hold excludes
// every other. zklock's read/write lock and semaphore run other rules on
// the same queue core (zklock/rwlock.go, semaphore.go): a read node goes
// when no writer precedes it, a lease node when it is among the first n.
// Their steps are the core's, so the replay checks them as it checks a
// mutex's (the delete queue's rule, the gate, the create, listing and
// watch steps, the grant's verdict under the session's lease, the loss
// rules, the order of sequence numbers); what it cannot check is the rule
// itself, which needs the listing's names (a turn records only our index)
// and, for a semaphore, its n (recorded nowhere). So:
//
//   - a write node (Curator's __WRIT__ marker) has the mutex's rule: its
//     turns are checked as the model's, and its holds exclude every other
//     process's holds on the path, reads included;
//   - a read node's turn "first" may come at any index (the readers before
//     it share), and its holds exclude only other processes' write and
//     mutex holds: readers share, and our own read rides on our own write
//     (a downgrade: the read rule ignores this RWLock's held write node);
//   - a lease node's turn and holds are not checked against the rule (up
//     to n leases hold at once); the delete, lease and loss rules are.
//
// Each such turn and hold is counted (Result.RecipeTurns, RecipeHolds) so
// that a summary says what was not checked against a rule of the model.

// The recipes a node is of, by the marker its name carries.
const (
	exclusive = iota // the mutex (-lock-, and foreign mutexes), or a write node
	reader           // a read node of a read/write lock
	lease            // a lease node of a semaphore
)

// Markers of zklock's recipes (zklock/rwlock.go, semaphore.go).
const (
	readMarker  = "-__READ__"
	leaseMarker = "-lease-"
)

// markers are what follows the GUID in the names of zklock's nodes: the
// mutex's, a read/write lock's two, a semaphore's lease.
var markers = []string{"-lock-", readMarker, "-__WRIT__", leaseMarker}

// markerOf is the marker a node or a create's prefix carries, or "".
// The two Locks of a read/write lock on one path differ by it, which
// tells their creates apart (forCreate).
func markerOf(node string) string {
	base := path.Base(prefixOf(node))
	for _, m := range markers {
		if strings.HasSuffix(base, m) {
			return m
		}
	}
	return ""
}

// sameMarker reports whether a create on prefix may be lock l's: l has
// made no create yet, or its creates carry the same marker.
func sameMarker(l *lock, prefix string) bool {
	return l.prefix == "" || markerOf(l.prefix) == markerOf(prefix)
}

// recipeOf is the recipe of a node or a create's prefix: its marker ends
// the name once the sequence number is cut.
func recipeOf(node string) int {
	base := path.Base(prefixOf(node))
	switch {
	case strings.HasSuffix(base, readMarker):
		return reader
	case strings.HasSuffix(base, leaseMarker):
		return lease
	}
	return exclusive
}

// ruleChecked reports whether the model's rule ("x == FIRST": our node
// first in the queue) decides a turn on node.
func ruleChecked(node string) bool { return recipeOf(node) == exclusive }

// conflicts reports whether a hold of recipe a excludes one of recipe b
// held by another process, or by the same session (same is true): readers
// share, and a session's read may ride on its own write.
func conflicts(a, b int, same bool) bool {
	switch {
	case a == lease || b == lease:
		return false // up to n leases: the semaphore's n is not recorded
	case a == reader && b == reader:
		return false
	case a == reader || b == reader:
		return !same
	}
	return true
}
