package writes

// The write path's seeded bugs (internal/mutant, the tierlockmutants
// tag), each the code as it stood before a fix, which the explorer must
// find (mutants_test.go). The others are single branches where they are.

// takeApartStopping is the apart-stops bug:
// every write put back goes apart at once, with no bound on the requests,
// and the round stops at the second write of a path, so that writes on
// repeated paths go about two a round trip, everything newer behind them.
func (q *Queue) takeApartStopping() [][]*Write {
	seen := make(map[string]bool)
	n := 0
	for n < len(q.queue) && q.queue[n].refusals >= 1 && !seen[q.queue[n].path] {
		seen[q.queue[n].path] = true
		n++
	}
	round := make([][]*Write, n)
	for i, w := range q.queue[:n] {
		round[i] = []*Write{w}
		q.takenLocked(round[i])
	}
	q.queue = append(q.queue[:0], q.queue[n:]...)
	return round
}

// createsAhead is the create-before-delete bug: a batch with a create
// leaves its deletes queued for the next one, so that a create goes out
// while its path's released node's delete is still waiting.
func createsAhead(batch, rest []*Write) (taken, left []*Write) {
	var dels []*Write
	for _, w := range batch {
		if w.kind == Delete {
			dels = append(dels, w)
		} else {
			taken = append(taken, w)
		}
	}
	if len(taken) == 0 {
		return batch, rest
	}
	return taken, append(dels, rest...)
}

// The write path's seeded bugs named here: each is the code before a
// fix, or a bug of the same class, and TestExploreFindsSeededBugs shows
// the check that refuses it.
const (
	// mutGiveUpLeavesNode: a create given up after it ended leaves its
	// node (GiveUp, Over): GiveUp's clean-up of the node, which its
	// callers rely on, forgotten.
	mutGiveUpLeavesNode = "giveup-leaves-node"
	// mutGoneToldNoNode: a delete sealed before the client learnt of its
	// session's expiry and answered in the next session tells its handler
	// plain zk.ErrNoNode, not that its node went with its session (the
	// code before the fix).
	mutGoneToldNoNode = "gone-told-nonode"
	// mutClosedUntold: a write ended by the session's close carries no
	// error (Result.Err nil), where the write path, not each of its
	// callers, carries the session's error with the verdict.
	mutClosedUntold = "closed-untold"
	// mutUnknownToldWithdrawn: a transaction given up once on the wire,
	// whose outcome then turned out unknown, is told "withdrawn" (never
	// applied) (Queue.Await's settledOr).
	mutUnknownToldWithdrawn = "unknown-told-withdrawn"
	// mutDeleteToldNeighbour: a delete in a batch refused at another
	// write's op tells its handler that refusal, its neighbour's (the
	// writer's settle).
	mutDeleteToldNeighbour = "delete-told-neighbour"
	// mutSizeByEstimate: a create is sized as its prefix and data plus 64
	// bytes per ACL entry, not by its encoding (the code before the fix).
	mutSizeByEstimate = "size-by-estimate"
	// mutSizeWithoutChroot: a path is sized as the caller named it, not as
	// the server reads it under a chroot.
	mutSizeWithoutChroot = "size-without-chroot"
)
