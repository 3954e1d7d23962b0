package session

import (
	"time"

	"github.com/tierlock/tierlock/internal/mutant"
	"github.com/tierlock/tierlock/internal/trace"
)

// The lease's deadline and what it tells (lease.go has the argument and
// the rule): the timer that ends the holds when the deadline passes, the
// lapse told when it begins and when it ends, the counters, and a round
// trip too long for any renewal.

// armLocked sets the deadline timer while holds exist. s.st.mu is held.
func (le *lease) armLocked() {
	if len(le.s.st.holds) == 0 {
		return
	}
	d := time.Until(le.deadline)
	if mutant.On(mutant.LapseLate) {
		d += le.period() // seeded bug: the holds outlive the deadline
	}
	if le.timer == nil {
		le.timer = time.AfterFunc(d, le.lapse)
	} else {
		le.timer.Reset(d)
	}
}

// lapse runs at the deadline: unless a proof moved it meanwhile, every hold
// of the session ends.
func (le *lease) lapse() {
	s := le.s
	s.st.mu.Lock()
	if s.st.closed {
		s.st.mu.Unlock()
		return
	}
	if now := time.Now(); le.validLocked(now) {
		le.armLocked()
		s.st.mu.Unlock()
		return
	}
	lost := s.takeHolds()
	if len(lost) > 0 {
		le.lapsedAt.CompareAndSwap(0, time.Now().UnixNano())
	}
	s.st.mu.Unlock()
	trace.Lapsed(s.zc, len(lost))
	if len(lost) > 0 {
		le.lapses.Add(1)
		le.wake() // the renewer proves the session until it is: see renew
		s.log.Warn("session not confirmed with the leader in time: holds end, grants wait until it is", "holds", len(lost), "bound", le.reach())
	}
	for _, h := range lost {
		if mutant.On(mutant.LossLate) {
			time.Sleep(200 * time.Millisecond) // seeded bug: the holders are told late
		}
		h.lose(ErrLeaseExpired)
	}
}

// stop ends the timer; the renewer ends with the session's context. A
// lapse under way ends with the floor, and is told so, as an outage is.
func (le *lease) stop() {
	le.s.st.mu.Lock()
	if le.timer != nil {
		le.timer.Stop()
	}
	le.s.st.mu.Unlock()
	if at := le.lapsedAt.Swap(0); at != 0 {
		le.s.log.Warn("session closed before it was confirmed with the leader again",
			"after", time.Since(time.Unix(0, at)).Round(time.Millisecond), "bound", le.reach())
	}
}

// confirmed tells the end of a lapse that began at lapsed (unix ns; 0:
// none), which a renewal just ended (renewLocked).
func (le *lease) confirmed(lapsed int64) {
	if lapsed == 0 || mutant.On(mutant.LapseEndUntold) { // seeded bug: the lapse's end untold
		return
	}
	le.s.log.Warn("session confirmed with the leader again: locks can be granted",
		"after", time.Since(time.Unix(0, lapsed)).Round(time.Millisecond), "bound", le.reach())
}

// LeaseStats counts how the session's lease (see WithLossOnExpiryOnly)
// bore on its locks since the session was made.
type LeaseStats struct {
	// Waits counts grants that had to wait for the session to be
	// confirmed with the leader before they could be made.
	Waits int64
	// Lapses counts the times the lease ran out while holds existed,
	// ending them with ErrLeaseExpired.
	Lapses int64
	// LateProofs counts the session's writes and syncs that succeeded but
	// came back too late to renew the lease: with a round trip longer than
	// the lease tolerates (a twelfth of the session timeout with the
	// servers' tick unknown). While every round trip is that slow, no lock
	// of the session can be granted, free or not: the network (or the
	// server) is too slow for the session timeout, not the lock held.
	LateProofs int64
	// LastLateRoundTrip is the round trip of the latest late proof.
	LastLateRoundTrip time.Duration
	// Bound is the lease's reach: how long after the latest touch the
	// leader is shown to have heard of the floor vouches for its holds,
	// seven eighths of the negotiated session timeout (nine eighths
	// under WithLossOnExpiryOnly).
	Bound time.Duration
	// Timeout is the session timeout the server granted (the one asked
	// for until a server answered).
	Timeout time.Duration
}

// LeaseStats reports the session's lease counters.
func (s *Floor) LeaseStats() LeaseStats {
	if s == nil {
		return LeaseStats{}
	}
	le := &s.st.lease
	return LeaseStats{Waits: le.waits.Load(), Lapses: le.lapses.Load(), LateProofs: le.late.Load(),
		LastLateRoundTrip: time.Duration(le.lateRTT.Load()), Bound: le.reach(), Timeout: s.timeout()}
}

// maxRoundTrip is the longest round trip with which a held lock's
// session keeps its lease ahead: a chain spans three round trips (j's,
// k's, l's), π, and up to two periods, and must leave T/16 for a grant
// (renew.go): T/12 with the tick unknown. A proof that renews nothing
// with a longer round trip says the network is too slow for the session
// timeout; one that renews nothing with a shorter one closed a chain
// whose k was old (a session that was quiet), which the renewer's next
// sync mends.
func (le *lease) maxRoundTrip() time.Duration {
	t := le.s.timeout()
	return max(le.reach()-le.gap()-2*le.period()-t/16, 0) / 3
}

// lateWarnEvery spaces tooLate's warnings.
const lateWarnEvery = 10 * time.Second

// tooLate notes a proof answered rtt after its send, longer than
// maxRoundTrip, that renewed nothing. With every round trip that long, a
// grant waits for ever while the lock may be free, so an operator is told,
// at most every lateWarnEvery, with the round trip and the longest the
// lease tolerates, and LeaseStats counts it.
func (le *lease) tooLate(rtt time.Duration) {
	le.late.Add(1)
	le.lateRTT.Store(int64(rtt))
	now := time.Now().UnixNano()
	last := le.warnedAt.Load()
	if now-last < int64(lateWarnEvery) || !le.warnedAt.CompareAndSwap(last, now) {
		return
	}
	le.s.log.Warn("session round trip too long to confirm the session with the leader: no lock of the session can be granted until it is shorter (a slow network or server, not a held lock)",
		"round_trip", rtt, "max_round_trip", le.maxRoundTrip(), "session_timeout", le.s.timeout())
}
