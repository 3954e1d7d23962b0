package zklock

import (
	"slices"
	"strings"
)

type entry struct {
	name string
	seq  int32
}

// sortQueue keeps the contenders among children (see Contender: the lock
// nodes of every family; other children are ignored) and orders them by
// sequence only, in issue order (sequenceBefore).
func sortQueue(children []string) []entry {
	return sortBy(children, func(c string) (int32, bool) {
		_, seq, ok := Contender(c)
		return seq, ok
	})
}

// sortBy keeps the children parse accepts and orders them by the sequence
// it returns, in issue order.
func sortBy(children []string, parse func(string) (int32, bool)) []entry {
	q := make([]entry, 0, len(children))
	for _, c := range children {
		if seq, ok := parse(c); ok {
			q = append(q, entry{c, seq})
		}
	}
	slices.SortFunc(q, func(a, b entry) int {
		switch {
		case a.seq == b.seq:
			return strings.Compare(a.name, b.name)
		case sequenceBefore(a.seq, b.seq):
			return -1
		default:
			return 1
		}
	})
	return q
}

// position finds our node in the queue: the node named name, or, when name
// is empty (the create's reply was lost), the node carrying our GUID.
func position(q []entry, name, guid string) int {
	for i, e := range q {
		if name != "" && e.name == name {
			return i
		}
		if name == "" && strings.HasPrefix(e.name, protectedPrefix+guid) {
			return i
		}
	}
	return -1
}

// A recipe's queue rule answers, for our node at index i of the sorted
// queue q, the two questions every waiter asks: may it go now, and if not,
// which node must it watch (the one whose deletion can change the answer)?
// The mutex's rule is below; the read/write lock's and the semaphore's are
// other functions of the same shape over the same queue.
type queueRule func(q []entry, i int) (goes bool, watch int)

// watchChildren, as a rule's watch, asks for a watch on the whole queue
// (any child created or deleted) instead of one node.
const watchChildren = -2

// mutexRule: the first node holds the lock; every other node watches its
// immediate predecessor, so a release wakes exactly one waiter (no herd).
func mutexRule(q []entry, i int) (goes bool, watch int) {
	if i == 0 {
		return true, -1
	}
	return false, i - 1
}

// readRule is the read rule over q for the node at i, ignoring the write
// node named own (our held write lock, or "").
func readRule(q []entry, i int, own string) (goes bool, watch int) {
	for j := i - 1; j >= 0; j-- {
		if q[j].name != own && isWriter(q[j].name) {
			return false, j
		}
	}
	return true, -1
}

// isWriter reports whether a contender excludes readers: every family
// except the readers of Curator and kazoo.
func isWriter(name string) bool {
	f, _, ok := Contender(name)
	return ok && f != FamilyCuratorRead && f != FamilyKazooRead
}

// firstN is the semaphore's rule: a lease node holds while it is among the
// first n; otherwise any change to the lease list can let it in, so it
// watches the list.
func firstN(n int) queueRule {
	return func(q []entry, i int) (bool, int) {
		if i < n {
			return true, -1
		}
		return false, watchChildren
	}
}
