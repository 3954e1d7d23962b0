package session

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"
)

// The lease explorer's properties, each on its side (the table is in
// lease_explore_test.go's header). Every bound here is computed from what
// the double recorded (its writes, its answers, the leader's expiries) and
// from lease.go's statement of the rule, never read from the floor.

// never is a time after every schedule.
const never = time.Duration(math.MaxInt64)

// check runs every property over the schedule's history.
func (w *world) check() []string {
	w.see()
	var fails []string
	add := func(format string, args ...any) { fails = append(fails, fmt.Sprintf(format, args...)) }
	for _, a := range w.members {
		w.checkLoss(a, add)
		w.checkPromise(a, add)
		w.checkGrantTold(a, add)
		w.checkLoseTold(a, add)
	}
	w.checkLive(add)
	w.checkOutageLines(add)
	w.checkLapseLines(add)
	w.coverSchedule()
	return fails
}

// ended is when a's hold ended: its first loss, or its release.
func (a *member) ended() time.Duration {
	e := never
	if len(a.loses) > 0 {
		e = a.loses[0].at
	}
	if a.forgot >= 0 {
		e = min(e, a.forgot)
	}
	return e
}

// checkLoss is (a), on the server's side: a hold granted in a session ends
// before the leader expires that session, and none is granted after (with
// WithLossOnExpiryOnly, lease.go's overlap: at most T/8 after).
func (w *world) checkLoss(a *member, add func(string, ...any)) {
	E := w.expiry(a.owner)
	if !a.granted() || E < 0 {
		return
	}
	var slack time.Duration
	if w.cfg.expiryOnly {
		slack = w.cfg.T / 8
	}
	e := a.ended()
	late := e >= E
	if slack > 0 {
		late = e > E+slack
	}
	switch {
	case a.returned >= E:
		add("(a) member %d granted at %v, after its session %#x expired at the leader (%v)", a.n, a.returned, a.owner, E)
	case late:
		add("(a) member %d held until %v, past its session %#x's expiry at the leader (%v) by %v",
			a.n, e, a.owner, E, e-E)
	}
}

// bound is a renewal: from at on, the rule lets holds stand until until.
type bound struct{ at, until time.Duration }

// renewals lists, in order, the renewals lease.go's rule allows session
// sid, from the double's records: each handshake that gave the session
// (under Dial: the tap reads it), counted from its connect request's
// write; each chain (j, k, l) closed by a sync or write l answered with
// success in the session, counted from j's write, j the latest packet
// seen touched (a reply to it or to a later packet of its connection came)
// by k's write less π, k the latest-written sync or write answered with
// success before l was handed over, each dated by its own write (under
// Wrap, its handing: nothing sees the writes). spec is the promise, (b);
// else the floor's rule, (c) and (e): k of the same session as l, and the
// touches the tap keeps (a grain apart).
func (w *world) renewals(sid int64, spec bool) []bound {
	key := renewalsKey{sid, spec, len(w.reqs), len(w.writes)}
	if out, ok := w.renewed[key]; ok {
		return out // the checks ask per member; the records are the same
	}
	var out []bound
	if !w.cfg.wrap {
		for _, x := range w.writes {
			if x.what == 'c' && x.c.sid == sid && x.c.n > 0 {
				out = append(out, bound{at: x.at, until: x.at + w.cfg.R()})
			}
		}
	}
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
			ks = append(ks, kBy{k.ansSeq, w.writeOf(k)})
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
		if wj, ok := touched.by(ks[i-1].w - w.cfg.gap()); ok {
			out = append(out, bound{at: l.answered, until: wj + w.cfg.R()})
		}
	}
	slices.SortStableFunc(out, func(x, y bound) int { return int(x.at - y.at) })
	if w.renewed == nil {
		w.renewed = make(map[renewalsKey][]bound)
	}
	w.renewed[key] = out
	return out
}

// renewalsKey names a renewals answer: its session and side, and the
// records it was read from.
type renewalsKey struct {
	sid          int64
	spec         bool
	reqs, writes int
}

// provers are the syncs and writes answered with success.
func (w *world) provers() []*req {
	var ps []*req
	for _, r := range w.reqs {
		if r.err == nil && r.over && r.conn != nil && r.wi >= 0 {
			ps = append(ps, r)
		}
	}
	return ps
}

// writeOf dates r's write: its own, as the floor does under Dial (the
// tap's waiter of every sync and write sees it begin), or under Wrap its
// handing (nothing sees the writes).
func (w *world) writeOf(r *req) time.Duration {
	if w.cfg.wrap {
		return r.handed
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
// confirmed, under Wrap the floor's own syncs and writes answered with
// success (nothing sees the rest). As the floor keeps them (spec false),
// the tap keeps a touch only a grain after the one before (wire.Touches),
// in the order the replies came.
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
		if x.confirmed >= 0 {
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

// deadline is the lease of session sid at t by the proofs ps: the latest
// until of those answered by t (-1<<62: none).
func deadline(ps []bound, t time.Duration) time.Duration {
	d := time.Duration(-1 << 62)
	for _, p := range ps {
		if p.at > t {
			break
		}
		d = max(d, p.until)
	}
	return d
}

// checkPromise is (b), the lease's promise on the spec's side: a hold is
// never standing at a time later than the renewals by then allow (each
// request dated by its own write).
func (w *world) checkPromise(a *member, add func(string, ...any)) {
	if !a.granted() {
		return
	}
	ps := w.renewals(a.owner, true)
	e := a.ended()
	lo := a.returned
	d := deadline(ps, lo)
	for _, p := range ps {
		if p.at <= lo {
			d = max(d, p.until) // answered at lo: counted from then
			continue
		}
		if p.at >= e {
			break
		}
		if p.at > max(lo, d) {
			break // held over [max(lo, d), p.at) with no lease
		}
		lo, d = p.at, max(d, p.until)
	}
	if hi := min(e, nextAnswer(ps, lo)); hi > max(lo, d) {
		add("(b) member %d (session %#x) held at %v, past the lease's promise %v (held %v to %v)",
			a.n, a.owner, max(lo, d), d, a.returned, e)
	}
}

// nextAnswer is the first answer of ps after t (never: none).
func nextAnswer(ps []bound, t time.Duration) time.Duration {
	for _, p := range ps {
		if p.at > t {
			return p.at
		}
	}
	return never
}

// upAt reports whether the floor could see a connection in session sid
// (0: any) at t.
func (w *world) upAt(t time.Duration, sid int64) bool {
	for _, u := range w.seen.ups {
		if (u.sid == sid || sid == 0) && u.from <= t && (u.to < 0 || t <= u.to) {
			return true
		}
	}
	return false
}

// learntBy reports whether the floor could know, by t (exactly at t: at),
// that session id expired: its state as it saw it (see), or, the truth,
// its connection's session id, which the floor reads at any time (the
// grant does).
func (w *world) learntBy(id int64, t time.Duration, at bool) bool { return learntIn(w.seen, id, t, at) }

func learntIn(h history, id int64, t time.Duration, at bool) bool {
	for _, l := range h.learnt {
		if l.id == id && (l.at == t || !at && l.at <= t) {
			return true
		}
	}
	return false
}

// see makes w.seen, the connection's history as the floor could see it:
// the double's own (go-zookeeper's event callback under Dial, and the
// event channel under Wrap, tell every state at once), or under Wrap
// without events, what its polls found: the state at each poll, every
// explorePoll from the floor's start until Close stopped them.
func (w *world) see() {
	if !w.cfg.wrap || w.cfg.events {
		w.seen = w.hist
		return
	}
	var h history
	end := w.closedAt()
	if end == never {
		end = w.now()
	}
	var cur *span // what the floor saw last: nil down
	for t := explorePoll; t < end; t += explorePoll {
		sid := w.upIn(t)
		switch {
		case cur != nil && sid == cur.sid:
			continue
		case cur != nil:
			// A drop, or a new session with no drop seen, which the floor
			// tells as an outage begun and over at once (tellOutage).
			cur.to = t
			h.drops = append(h.drops, t)
		}
		cur = nil
		if sid == 0 {
			continue
		}
		if n := len(h.ups); n > 0 && h.ups[n-1].sid != sid && w.expiredBy(h.ups[n-1].sid, t) {
			h.learnt = append(h.learnt, learnt{at: t, id: h.ups[n-1].sid})
		}
		h.ups = append(h.ups, span{from: t, to: -1, sid: sid})
		cur = &h.ups[len(h.ups)-1]
	}
	h.closeAt, h.ntx = w.hist.closeAt, w.hist.ntx
	w.seen = h
}

// upIn is the session the double's connection had at t (0: none).
func (w *world) upIn(t time.Duration) int64 {
	for _, u := range w.hist.ups {
		if u.from <= t && (u.to < 0 || t < u.to) {
			return u.sid
		}
	}
	return 0
}

// checkGrantTold is (c) for Grant: nil, ErrNodeGone once the owner's
// session is over, ErrClosed after Close, ctx's error once it ended.
func (w *world) checkGrantTold(a *member, add func(string, ...any)) {
	t := a.returned
	if t < 0 {
		return
	}
	switch err := a.err; {
	case err == nil:
		if !w.upAt(t, a.owner) && !(w.cfg.expiryOnly && !w.learntBy(a.owner, t, false)) {
			add("(c) member %d granted at %v with no connection in its session %#x", a.n, t, a.owner)
		}
	case errors.Is(err, ErrNodeGone):
		w.cover(coverGoneTold, true)
		if !learntIn(w.hist, a.owner, t, false) || !w.expiredBy(a.owner, t) {
			add("(c) member %d told its node is gone at %v, its session %#x not over", a.n, t, a.owner)
		}
	case err == ErrClosed:
		w.cover(coverGrantClosed, true)
		if w.hist.closeAt < 0 || w.hist.closeAt > t {
			add("(c) member %d told closed at %v before Close", a.n, t)
		}
	case errors.Is(err, context.Canceled):
		w.cover(coverGrantCancelled, true)
		if a.cancelAt < 0 || a.cancelAt > t {
			add("(c) member %d told its ctx ended at %v before it did", a.n, t)
		}
	default:
		add("(c) member %d: Grant returned %v", a.n, err)
	}
}

// checkLoseTold is (c) for lose: once, for a hold, with the cause that
// happened; and a hold standing when the floor learns that its session is
// over (its state, or a new session id) is told then.
func (w *world) checkLoseTold(a *member, add func(string, ...any)) {
	for _, l := range w.seen.learnt {
		if a.granted() && l.id == a.owner && a.returned <= l.at && a.ended() > l.at {
			add("(c) member %d held past %v, when its session %#x was learnt over", a.n, l.at, a.owner)
		}
	}
	switch {
	case len(a.loses) == 0:
		return
	case len(a.loses) > 1:
		add("(c) member %d told lost %d times", a.n, len(a.loses))
	case !a.granted() || a.loses[0].at < a.returned:
		add("(c) member %d told lost with no hold", a.n)
	}
	l := a.loses[0]
	ok := false
	switch l.cause {
	case ErrDisconnected:
		ok = !w.cfg.expiryOnly && slices.Contains(w.seen.drops, l.at)
		w.cover(coverDisconnectedTold, ok)
	case ErrSessionExpired:
		// Never seen: the lease ends every hold before the leader can
		// expire its session (lease.go), so before the client learns it.
		ok = w.learntBy(a.owner, l.at, true) && w.expiredBy(a.owner, l.at)
	case ErrLeaseExpired:
		ok = deadline(w.renewals(a.owner, false), l.at) <= l.at && (w.cfg.expiryOnly || w.upAt(l.at, a.owner))
		w.cover(coverLapse, ok)
	case ErrClosed:
		ok = w.hist.closeAt >= 0 && w.hist.closeAt <= l.at
		w.cover(coverClosedTold, ok)
	}
	if !ok {
		add("(c) member %d (session %#x) told lost at %v: %v, which did not happen then", a.n, a.owner, l.at, l.cause)
	}
}

// checkLive is (d), on a healthy schedule (no fault, every answer within
// a few hundredths of T) whose servers' tick is at most half the session
// timeout: the lease never lapses, and every Grant returns nil within T/4
// (under Wrap, T/4 + π).
func (w *world) checkLive(add func(string, ...any)) {
	if !w.cfg.healthy || 2*w.cfg.tick > w.cfg.T {
		return // a tick over half the session, which Dial warns of, leaves the lease little room
	}
	w.cover(coverHealthy, true)
	if _, n, _, _, _, _ := w.s.lease.Stats(); n > 0 {
		add("(d) the lease lapsed %d times on a healthy schedule", n)
	}
	// Under Wrap no handshake and no ping is seen: a session's first
	// chain needs a ping interval (π) after its first sync's answer.
	within := w.cfg.T / 4
	if w.cfg.wrap {
		within += w.cfg.gap()
	}
	for _, a := range w.members {
		switch {
		case a.called < 0 || a.returned >= 0 && a.err == ErrClosed:
		case a.returned < 0 || a.err != nil:
			add("(d) member %d's Grant, called at %v, returned %v at %v on a healthy schedule", a.n, a.called, a.err, a.returned)
		case a.returned-a.called > within:
			add("(d) member %d's Grant took %v on a healthy schedule", a.n, a.returned-a.called)
		}
	}
}
