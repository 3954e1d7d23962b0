package runrec

import "slices"

// Spreading runs across the fleet (runonce.WithSpread): who made the last
// runs (Recent) and who wrote since (Since), and whether an instance steps
// back from the tick it is about to decide.

// Spread returns Recent and Since after a write of r: when the write ran,
// its writer leads Recent and Since starts afresh. When it stepped back
// (SteppedBack), Since starts afresh with the writer alone: the instances
// seen before it had this tick left to them, and only those that write
// after it (those that came) count as alive for the next one. So a tick
// left to an instance that does not come is the only one lost to it: the
// next tick's attempts no longer step back for it (when it was kept in
// Since until the next run, an instance that wrote once and left made the
// last runner step back on every tick after). Otherwise the writer joins
// Since.
func (r Record) Spread(ran, steppedBack bool) (recent, since []string) {
	switch {
	case r.By == "":
		return r.Recent, r.Since // not an attempt (Keep)
	case steppedBack:
		return r.Recent, appendNew(nil, r.By, MaxRecent)
	case !ran:
		return r.Recent, appendNew(r.Since, r.By, MaxRecent)
	}
	recent = []string{r.By}
	for _, n := range r.Recent {
		if n != r.By && len(recent) < MaxRecent {
			recent = append(recent, n)
		}
	}
	return recent, nil
}

// appendNew appends n to names unless it is there or names has max.
func appendNew(names []string, n string, max int) []string {
	for _, m := range names {
		if m == n {
			return names
		}
	}
	if len(names) >= max {
		return names
	}
	return append(names[:len(names):len(names)], n)
}

// Yields reports whether the instance by steps back from the tick it is
// about to decide, under spreading (runonce.WithSpread): when it made
// one of the last k runs, k being how many other instances showed
// themselves alive since the last run (the runner, and those that wrote
// after it). Of k+1 instances one at least made none of the last k runs
// and never steps back, so a tick is lost only when that one does not
// come (it left, or met the lock held), and only that tick (Spread); the
// rule decides as ever, so no tick runs twice.
func (l Last) Yields(by string) bool {
	alive := map[string]bool{}
	for _, n := range append([]string{l.By}, l.Since...) {
		if n != "" && n != by {
			alive[n] = true
		}
	}
	k := min(len(alive), len(l.Recent))
	return k > 0 && slices.Contains(l.Recent[:k], by)
}
