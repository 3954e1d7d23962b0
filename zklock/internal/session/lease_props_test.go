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

// bound is a proof: answered at at, it lets holds stand until until.
type bound struct{ at, until time.Duration }

// sent is lease.go's send time of a proof whose first write after its
// handing (or its own write) is write i: its start, capped at the start
// of the write before it plus T/8.
func (w *world) sent(i int) time.Duration {
	s := w.writes[i].at
	if i > 0 {
		s = min(s, w.writes[i-1].at+w.cfg.T/8)
	}
	return s
}

// proofs lists, in answer order, the requests that proved session sid
// (written and answered in it, successfully): spec counts each from its
// own write (the promise, (b)); else from the first write after its
// handing, and only those handed in sid (the floor's rule, lease.go: (c),
// (e)).
func (w *world) proofs(sid int64, spec bool) []bound {
	var ps []bound
	for _, r := range w.reqs {
		if r.err != nil || !r.over || r.conn == nil || r.conn.sid != sid || r.wi < 0 {
			continue
		}
		i := r.wi
		if !spec {
			if r.sid != sid || r.mark >= len(w.writes) {
				continue
			}
			i = r.mark
		}
		ps = append(ps, bound{at: r.answered, until: w.sent(i) + w.cfg.B()})
	}
	slices.SortStableFunc(ps, func(x, y bound) int { return int(x.at - y.at) })
	return ps
}

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
// never standing at a time later than the latest proof answered by then
// allows: its send time (its own write's start, capped at the write
// before it plus T/8) plus B.
func (w *world) checkPromise(a *member, add func(string, ...any)) {
	if !a.granted() {
		return
	}
	ps := w.proofs(a.owner, true)
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

// upAt reports whether the client had a connection in session sid (0:
// any) at t.
func (w *world) upAt(t time.Duration, sid int64) bool {
	for _, u := range w.hist.ups {
		if (u.sid == sid || sid == 0) && u.from <= t && (u.to < 0 || t <= u.to) {
			return true
		}
	}
	return false
}

// learntBy reports whether the client learnt, by t (exactly at t: at),
// that session id expired.
func (w *world) learntBy(id int64, t time.Duration, at bool) bool {
	for _, l := range w.hist.learnt {
		if l.id == id && (l.at == t || !at && l.at <= t) {
			return true
		}
	}
	return false
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
		if !w.learntBy(a.owner, t, false) || !w.expiredBy(a.owner, t) {
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
// happened.
func (w *world) checkLoseTold(a *member, add func(string, ...any)) {
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
		ok = !w.cfg.expiryOnly && slices.Contains(w.hist.drops, l.at)
		w.cover(coverDisconnectedTold, ok)
	case ErrSessionExpired:
		// Never seen: the lease ends every hold before the leader can
		// expire its session (lease.go), so before the client learns it.
		ok = w.learntBy(a.owner, l.at, true) && w.expiredBy(a.owner, l.at)
	case ErrLeaseExpired:
		ok = deadline(w.proofs(a.owner, false), l.at) <= l.at && (w.cfg.expiryOnly || w.upAt(l.at, a.owner))
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
// B/8): the lease never lapses, and every Grant returns nil within T/4.
func (w *world) checkLive(add func(string, ...any)) {
	if !w.cfg.healthy {
		return
	}
	w.cover(coverHealthy, true)
	if n := w.s.LeaseStats().Lapses; n > 0 {
		add("(d) the lease lapsed %d times on a healthy schedule", n)
	}
	for _, a := range w.members {
		switch {
		case a.called < 0 || a.returned >= 0 && a.err == ErrClosed:
		case a.returned < 0 || a.err != nil:
			add("(d) member %d's Grant, called at %v, returned %v at %v on a healthy schedule", a.n, a.called, a.err, a.returned)
		case a.returned-a.called > w.cfg.T/4:
			add("(d) member %d's Grant took %v on a healthy schedule", a.n, a.returned-a.called)
		}
	}
}
