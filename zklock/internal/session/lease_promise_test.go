package session

import (
	"slices"
	"sort"
	"time"

	"github.com/tierlock/tierlock/zklock/internal/wire"
)

// The lease's rule, from the double's record (lease_props_test.go checks
// it): the renewals each proof and handshake allows, and the deadline they
// make at each moment, D = t + R, t the latest touch shown by then and R
// reached by the least timeout granted the session by then (so a grant
// of a shorter one brings D in at once), and π from the same least: the
// members share one tick and grant no session less than two of it
// (lease.go's tick), unless the floor is told the tick.

// bound is a renewal: from at on, the rule counts a touch at the leader
// at from, which lets holds stand until from + R (deadlineAt).
type bound struct{ at, from time.Duration }

// grantsBy returns the least and the most timeout granted session sid by
// t, as the floor could know them (seen: the connect answers as the tap
// or the connection's state told them; under Wrap without events, what
// its polls read), or the asked before any: lease.go's Timeout and tick.
func (w *world) grantsBy(sid int64, t time.Duration) (least, most time.Duration) {
	for _, g := range w.seen.grants {
		if g.sid != sid || g.at > t {
			continue
		}
		if least == 0 {
			least, most = g.T, g.T
		}
		least, most = min(least, g.T), max(most, g.T)
	}
	if least == 0 {
		return w.cfg.asked, w.cfg.asked
	}
	return least, most
}

// reachAt is R for session sid at t, and gapAt its π.
func (w *world) reachAt(sid int64, t time.Duration) time.Duration {
	least, _ := w.grantsBy(sid, t)
	return w.cfg.reach(least)
}

func (w *world) gapAt(sid int64, t time.Duration) time.Duration {
	least, _ := w.grantsBy(sid, t)
	return w.cfg.gapOf(least)
}

// renewal is a bound answered at at from a touch at from.
func (w *world) renewal(sid int64, at, from time.Duration) bound {
	return bound{at: at, from: from}
}

// renewals lists, in order, the renewals lease.go's rule allows session
// sid, from the double's records: each handshake that gave the session
// (under Dial: the tap reads it), answered when its answer was read and
// counted from its connect request's write; each chain (j, k, l) closed
// by a sync or write l answered with success in the session, counted from
// j's write, j the latest packet seen touched (a reply to it or to a
// later packet of its connection came; an auth's reply confirms none) by
// k's write less π, k the latest-written sync or write answered with
// success before l was handed over, each dated by its own write (under
// Wrap, its handing: nothing sees the writes). spec is the promise, (b);
// else the floor's rule, (c) and (e): k of the same session as l, the
// touches the tap keeps (a grain apart), and, with no pipelining, a write
// dated by the first write after its handing.
func (w *world) renewals(sid int64, spec bool) []bound {
	key := renewalsKey{sid, spec, len(w.reqs), len(w.writes)}
	if out, ok := w.renewed[key]; ok {
		return out // the checks ask per member; the records are the same
	}
	out := append(w.handshakes(sid), w.chains(sid, spec)...)
	slices.SortStableFunc(out, func(x, y bound) int { return int(x.at - y.at) })
	if w.renewed == nil {
		w.renewed = make(map[renewalsKey][]bound)
	}
	w.renewed[key] = out
	return out
}

// handshakes are the renewals of session sid's connect answers, under
// Dial (the tap reads them): each from its request's write, once read.
func (w *world) handshakes(sid int64) []bound {
	var out []bound
	if w.cfg.wrap {
		return nil
	}
	for _, x := range w.writes {
		if x.what == 'c' && x.confirmed >= 0 && x.c.sid == sid {
			out = append(out, w.renewal(sid, x.confirmed, x.at))
		}
	}
	return out
}

// chains are the renewals of session sid's chains (j, k, l), l a proof
// of the session answered with success (renewals says which j and k).
func (w *world) chains(sid int64, spec bool) []bound {
	var out []bound
	proofs := w.provers()
	// The k's in answer order, each with the latest write among them by
	// then: l's k is the last of those answered before l was handed.
	type kBy struct {
		ans int
		w   time.Duration
	}
	var ks []kBy
	for _, k := range proofs {
		if spec || k.sid == sid && k.conn.sid == sid {
			ks = append(ks, kBy{k.ansSeq, w.writeOf(k, spec)})
		}
	}
	slices.SortStableFunc(ks, func(x, y kBy) int { return x.ans - y.ans })
	for i := 1; i < len(ks); i++ {
		ks[i].w = max(ks[i].w, ks[i-1].w)
	}
	touched := w.touches(spec)
	for _, l := range proofs {
		if l.conn.sid != sid {
			continue
		}
		i, _ := slices.BinarySearchFunc(ks, l.handSeq, func(k kBy, h int) int { return k.ans - h })
		if i == 0 {
			continue
		}
		if wj, ok := touched.by(ks[i-1].w - w.gapAt(sid, l.answered)); ok {
			out = append(out, w.renewal(sid, l.answered, wj))
		}
	}
	return out
}

// renewalsKey names a renewals answer: its session and side, and the
// records it was read from.
type renewalsKey struct {
	sid          int64
	spec         bool
	reqs, writes int
}

// provers are the syncs and writes answered with success (not an auth:
// the server answers it untouched, without the leader).
func (w *world) provers() []*req {
	var ps []*req
	for _, r := range w.reqs {
		if r.err == nil && r.over && r.conn != nil && r.wi >= 0 && r.op != opAuth {
			ps = append(ps, r)
		}
	}
	return ps
}

// writeOf dates r's write: its own, as the floor does under Dial (the
// tap's waiter of every sync and write sees it begin) and as the spec
// does; under Wrap its handing (nothing sees the writes); and, as the
// floor does with no pipelining, a write, which has no waiter, by the
// first write begun after its handing that is not a ping (the tap's
// ring: go-zookeeper writes its requests in order, its pings outside it).
func (w *world) writeOf(r *req, spec bool) time.Duration {
	switch {
	case w.cfg.wrap:
		return r.handed
	case spec || !w.cfg.noPipelining || r.op == wire.OpSync:
		return w.writes[r.wi].at
	}
	for _, x := range w.writes[r.mark:r.wi] {
		if x.what != 'p' {
			return x.at
		}
	}
	return w.writes[r.wi].at
}

// touchIndex is the touches known, in the order they were seen touched,
// each with the latest write time among them by then.
type touchIndex []struct{ confirmed, best time.Duration }

// by is the write time of the latest packet seen touched by t.
func (ti touchIndex) by(t time.Duration) (time.Duration, bool) {
	i := sort.Search(len(ti), func(i int) bool { return ti[i].confirmed > t })
	if i == 0 {
		return -1, false
	}
	return ti[i-1].best, true
}

// touches indexes the packets seen touched: under Dial any packet a reply
// confirmed but an auth, under Wrap the floor's own syncs and writes
// answered with success (nothing sees the rest). As the floor keeps them
// (spec false), the tap keeps a touch only a grain after the one before
// (wire.Touches), in the order the replies came.
func (w *world) touches(spec bool) touchIndex {
	var ti touchIndex
	add := func(confirmed, written time.Duration) {
		best := written
		if n := len(ti); n > 0 {
			best = max(best, ti[n-1].best)
		}
		ti = append(ti, struct{ confirmed, best time.Duration }{confirmed, best})
	}
	if w.cfg.wrap {
		ps := w.provers()
		slices.SortStableFunc(ps, func(x, y *req) int { return int(x.answered - y.answered) })
		for _, r := range ps {
			add(r.answered, r.handed)
		}
		return ti
	}
	var ts []writeRec
	for _, x := range w.writes {
		if x.confirmed >= 0 && (x.r == nil || x.r.op != opAuth) {
			ts = append(ts, x)
		}
	}
	slices.SortStableFunc(ts, func(x, y writeRec) int { return int(x.confirmed - y.confirmed) })
	last := time.Duration(-1 << 62)
	for _, x := range ts {
		if !spec && x.at < last+touchGrain {
			continue
		}
		last = max(last, x.at)
		add(x.confirmed, x.at)
	}
	return ti
}

// touchGrain is the tap's (wire.Touches).
const touchGrain = 10 * time.Millisecond

// noLease is the deadline before any renewal.
const noLease = time.Duration(-1 << 62)

// deadlineAt is the lease of session sid at t by the renewals ps: the
// latest touch of those answered by t, plus R as it is at t, or less while
// a reconnection's grant is untold (untoldCapAt; early: as early as the
// floor may date it) (noLease: none).
func (w *world) deadlineAt(sid int64, ps []bound, t time.Duration, early bool) time.Duration {
	from := noLease
	for _, p := range ps {
		if p.at > t {
			break
		}
		from = max(from, p.from)
	}
	if from == noLease {
		return noLease
	}
	d := from + w.reachAt(sid, t)
	if c, ok := w.untoldCapAt(sid, t, early); ok {
		d = min(d, c)
	}
	return d
}

// untoldCapAt is lease.go's bound on the deadline of session sid at t
// while a reconnection's grant is untold, under WithLossOnExpiryOnly
// (Lease.untoldCap): 9/8 of the least timeout a member can grant, as the
// floor knows it, past the first connection made since the session was
// last seen up (Dial: its StateConnected, before its connect request), or,
// under Wrap, past the floor's last look that saw the session up (early:
// the poll before the one that saw it down; else that one). ok is false
// when the session is up at t, or no connection was made since.
func (w *world) untoldCapAt(sid int64, t time.Duration, early bool) (time.Duration, bool) {
	if !w.cfg.expiryOnly {
		return 0, false
	}
	var u *span
	for i := range w.seen.ups {
		if w.seen.ups[i].from <= t {
			u = &w.seen.ups[i]
		}
	}
	if u == nil || u.sid != sid || u.to < 0 || u.to > t {
		return 0, false
	}
	from := u.to
	switch {
	case !w.cfg.wrap:
		i, _ := slices.BinarySearch(w.hist.dials, u.to)
		if i == len(w.hist.dials) || w.hist.dials[i] > t {
			return 0, false
		}
		from = w.hist.dials[i]
	case early:
		from -= explorePoll
	}
	least := w.cfg.leastGrantable()
	return from + least + least/8, true
}

// checkPromise is (b), the lease's promise on the spec's side: a hold is
// never standing at a time later than the renewals and grants by then
// allow (each request dated by its own write). The deadline moves only
// at a renewal's answer (out), a grant's (in) or a reconnection's (in):
// between two such moments the hold must end by it.
func (w *world) checkPromise(a *member, add func(string, ...any)) {
	if !a.granted() {
		return
	}
	ps := w.renewals(a.owner, true)
	var moves []time.Duration
	for _, p := range ps {
		moves = append(moves, p.at)
	}
	for _, g := range w.seen.grants {
		if g.sid == a.owner {
			moves = append(moves, g.at)
		}
	}
	// And where a reconnection's untold grant brings it in and out
	// (untoldCapAt).
	moves = append(moves, w.hist.dials...)
	for _, u := range w.seen.ups {
		moves = append(moves, u.from, u.to)
	}
	slices.Sort(moves)
	e := a.ended()
	for lo := a.returned; ; {
		d := w.deadlineAt(a.owner, ps, lo, false)
		next := never
		if i, _ := slices.BinarySearch(moves, lo+1); i < len(moves) {
			next = moves[i]
		}
		if hi := min(e, next); hi > max(lo, d) {
			add("(b) member %d (session %#x) held at %v, past the lease's promise %v (held %v to %v)",
				a.n, a.owner, max(lo, d), d, a.returned, e)
			return
		}
		if next >= e {
			return
		}
		lo = next
	}
}
