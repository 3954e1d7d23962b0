package session

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
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
		w.checkMargin(a, add)
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
// before the leader expires that session (its expiry queue's, from the
// double), and none is granted after (with WithLossOnExpiryOnly, lease.go's
// overlap: at most T/8 after, T the least timeout granted the session by
// the hold's end).
func (w *world) checkLoss(a *member, add func(string, ...any)) {
	E := w.expiry(a.owner)
	if !a.granted() || E < 0 {
		return
	}
	e := a.ended()
	var slack time.Duration
	if w.cfg.expiryOnly {
		least, _ := w.grantsBy(a.owner, e)
		slack = least / 8
	}
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
// without events, what its polls found: the state at its start (Wrap's
// catchUp) and at each poll, every explorePoll until Close stopped them,
// and the
// timeout the connection had been granted then, which it reads at each
// (a grant between two polls, superseded by the next, goes unseen).
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
	for t := time.Duration(0); t < end; t += explorePoll {
		sid := w.upIn(t)
		if sid != 0 {
			h.noteGrant(t, sid, w.grantIn(t))
		}
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

// grantIn is the timeout the latest connect answer by t granted.
func (w *world) grantIn(t time.Duration) time.Duration {
	var d time.Duration
	for _, g := range w.hist.grants {
		if g.at <= t {
			d = g.T
		}
	}
	return d
}

// noteGrant keeps a grant a poll read, unless it read the same before.
func (h *history) noteGrant(at time.Duration, sid int64, d time.Duration) {
	if n := len(h.grants); n > 0 && h.grants[n-1].sid == sid && h.grants[n-1].T == d {
		return
	}
	h.grants = append(h.grants, grantRec{at: at, sid: sid, T: d})
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
	if l := a.loses[0]; !w.happened(a, l) {
		add("(c) member %d (session %#x) told lost at %v: %v, which did not happen then", a.n, a.owner, l.at, l.cause)
	}
}

// happened reports whether the cause a was told lost with happened when
// it was told.
func (w *world) happened(a *member, l told) (ok bool) {
	switch l.cause {
	case ErrDisconnected:
		ok = !w.cfg.expiryOnly && slices.Contains(w.seen.drops, l.at)
		w.cover(coverDisconnectedTold, ok)
	case ErrSessionExpired:
		// Never seen: the lease ends every hold before the leader can
		// expire its session (lease.go), so before the client learns it.
		ok = w.learntBy(a.owner, l.at, true) && w.expiredBy(a.owner, l.at)
	case ErrLeaseExpired:
		ok = w.deadlineAt(a.owner, w.renewals(a.owner, false), l.at, true) <= l.at && (w.cfg.expiryOnly || w.upAt(l.at, a.owner))
		w.cover(coverLapse, ok)
	case ErrClosed:
		ok = w.hist.closeAt >= 0 && w.hist.closeAt <= l.at
		w.cover(coverClosedTold, ok)
	}
	return ok
}

// checkMargin is (d) on every schedule: a hold is granted only while the
// deadline lies T/16 ahead (lease.go), so a lapse of the lease ends none
// less than T/16 after its grant, unless the connection dropped or a
// connection was made since (under Wrap without events, since the poll
// before the grant): its answer may grant a shorter timeout, and under
// WithLossOnExpiryOnly the grant on its way bounds the deadline from the
// drop or the connection on (untoldCap), either bringing the deadline in
// at once. T is the least timeout granted the session by the lapse, as
// the floor could know it.
func (w *world) checkMargin(a *member, add func(string, ...any)) {
	if !a.granted() || len(a.loses) == 0 || a.loses[0].cause != ErrLeaseExpired {
		return
	}
	at := a.loses[0].at
	least, _ := w.grantsBy(a.owner, at)
	if at-a.returned >= least/16 {
		return
	}
	from := a.returned - explorePoll
	for _, ts := range [][]time.Duration{w.hist.dials, w.hist.drops} {
		if i, _ := slices.BinarySearch(ts, from); i < len(ts) && ts[i] <= at {
			return
		}
	}
	add("(d) member %d granted at %v, lost to a lapse of the lease at %v, within T/16 (%v) of its grant", a.n, a.returned, at, least/16)
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
		within += w.cfg.gapOf(w.cfg.T)
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
