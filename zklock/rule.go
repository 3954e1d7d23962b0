package zklock

// A recipe's queue rule answers, for our node at index i of the sorted
// queue q, the two questions every waiter asks: may it go now, and if not,
// which node must it watch (the one whose deletion can change the answer)?
// The mutex's rule is below; a read lock's, a write lock's or a
// semaphore's would be another function of the same shape over the same
// queue core (enqueue, wait, hold).
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

// leads reports whether the node named name may go now in q under rule:
// false when it is absent.
func leads(rule queueRule, q []entry, name string) bool {
	i := position(q, name, "")
	if i < 0 {
		return false
	}
	goes, _ := rule(q, i)
	return goes
}
