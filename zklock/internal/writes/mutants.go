package writes

// The write path's seeded bugs (internal/mutant, the tierlockmutants
// tag), each the code as it stood before a fix, which the explorer must
// find (mutants_test.go). The others are single branches where they are.

// takeApartStopping is the apart-stops bug (the fifth review's item 6):
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

// The seeded bugs of issue 49's review (the sixth), named here: each is
// the code before a fix, or a bug of the class the review found, and
// TestExploreFindsSeededBugs shows the check that refuses it.
const (
	// mutGiveUpLeavesNode: a create given up after it ended leaves its
	// node (GiveUp, Over): the clean-up the caller did before GiveUp did
	// it (issue 52), forgotten.
	mutGiveUpLeavesNode = "giveup-leaves-node"
	// mutGoneToldNoNode: a delete sealed before the client learnt of its
	// session's expiry and answered in the next session tells its handler
	// plain zk.ErrNoNode, not that its node went with its session (the
	// review's item 6: the code before the fix).
	mutGoneToldNoNode = "gone-told-nonode"
	// mutClosedUntold: a write ended by the session's close carries no
	// error (Result.Err nil): zklock mapped the verdict to its error in
	// three places (issue 52), and the write path said nothing.
	mutClosedUntold = "closed-untold"
	// mutUnknownToldWithdrawn: a transaction given up once on the wire,
	// whose outcome then turned out unknown, is told "withdrawn" (never
	// applied) (Queue.Await's settledOr; the review's item 2).
	mutUnknownToldWithdrawn = "unknown-told-withdrawn"
	// mutDeleteToldNeighbour: a delete in a batch refused at another
	// write's op tells its handler that refusal, its neighbour's (the
	// writer's settle; item 2).
	mutDeleteToldNeighbour = "delete-told-neighbour"
	// mutSizeByEstimate: a create is sized as its prefix and data plus 64
	// bytes per ACL entry, as before the fix (item 1).
	mutSizeByEstimate = "size-by-estimate"
	// mutSizeWithoutChroot: a path is sized as the caller named it, not as
	// the server reads it under a chroot, as before issue 55's item 2.
	mutSizeWithoutChroot = "size-without-chroot"
)
