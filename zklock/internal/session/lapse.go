package session

import (
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/tierlock/tierlock/internal/mono"
	"github.com/tierlock/tierlock/internal/mutant"
	"github.com/tierlock/tierlock/internal/trace"
)

// The lease's deadline and what it tells (lease.go has the argument and
// the rule): the timer that ends the holds when the deadline passes, the
// lapse told when it begins and when it ends, the counters, and a round
// trip too long for any renewal.

// armLocked sets the deadline timer while holds exist, and keeps the
// deadline it is armed for (due, which Member.Vouch reads without st.mu).
// st.mu is held.
func (le *Lease) armLocked() {
	deadline := le.deadlineLocked()
	le.due.Store(int64(mono.Of(deadline)))
	if len(le.s.st.holds) == 0 {
		return
	}
	d := time.Until(deadline)
	if mutant.On(mutant.LapseLate) {
		d += le.period() // seeded bug: the holds outlive the deadline
	}
	if le.timer == nil {
		le.timer = time.AfterFunc(d, le.lapse)
	} else {
		le.timer.Reset(d)
	}
}

// aheadAt reports whether now is before the deadline the timer was last
// armed for: the holds stand, with no look under st.mu. Every move of the
// deadline arms the timer again (a renewal, a handshake, a grant on its
// way, a new session's reset ends the holds first), so due is never later
// than the deadline as st.mu would compute it; a zero deadline (no touch
// yet) is never ahead.
func (le *Lease) aheadAt(now mono.Time) bool {
	d := le.due.Load()
	return d != 0 && now < mono.Time(d)
}

// lapse runs at the deadline: unless a proof moved it meanwhile, every hold
// of the session ends.
func (le *Lease) lapse() {
	s := le.s
	s.st.mu.Lock()
	if s.st.closed {
		s.st.mu.Unlock()
		return
	}
	if le.validLocked(mono.Now().Std()) {
		le.armLocked()
		s.st.mu.Unlock()
		return
	}
	lap := le.endLocked()
	s.st.mu.Unlock()
	lap.tell()
}

// judgeLocked is the lease judged at this moment, on the monotonic clock, by
// whoever asks of a hold (Member.Vouch, Member.Leave): if its deadline has
// passed with holds standing, they end now, as the timer would have ended
// them (endLocked), and the lapse is returned for its caller to tell once
// st.mu is released. A process resumed from a stop asks before its timer
// has run. st.mu is held.
func (le *Lease) judgeLocked() lapseEnd {
	if le.s.st.closed || len(le.s.st.holds) == 0 || le.validLocked(mono.Now().Std()) {
		return lapseEnd{}
	}
	return le.endLocked()
}

// lapseEnd is what a lapse of the lease ended: the holds to tell lost, why
// (untoldWhy), and the stall of this process it began with, if any.
type lapseEnd struct {
	le      *Lease
	lost    []*Member
	why     string
	stall   mono.Stall
	stalled bool
}

// endLocked ends every hold of the session with ErrLeaseExpired: the
// deadline passed. st.mu is held (and outage.mu taken inside it).
func (le *Lease) endLocked() lapseEnd {
	s := le.s
	lap := lapseEnd{le: le, lost: s.st.holds.endAll(ErrLeaseExpired), why: le.untoldWhy()}
	if len(lap.lost) > 0 {
		lap.stall, lap.stalled = le.lapsing()
	}
	if lap.stalled {
		// Counted as the holds are taken, under st.mu: an outage of the
		// same stall that begins as soon as st.mu is released (its
		// disconnection found them taken) must count them already.
		s.out.stallEnded(lap.stall, len(lap.lost))
	}
	trace.Lapsed(s.zc, len(lap.lost)) // under mu, as a release is decided (Member.Leave)
	return lap
}

// tell tells the lapse: counted, the renewer woken, one line with the
// holds it ended (and the stall it began with, whose outage counts them
// too: endLocked), and each hold told lost, once.
func (lap lapseEnd) tell() {
	if len(lap.lost) == 0 {
		return
	}
	le := lap.le
	le.lapses.Add(1)
	le.wake() // the renewer proves the session until it is: see renew
	msg := "session not confirmed with the leader in time" + lap.why + ": holds end, grants wait until it is"
	stalled := le.stalledFor()
	if stalled != nil {
		msg += "; this process stalled (stopped, suspended or paused: its monotonic clock jumped) past the lease's deadline"
	}
	le.s.log.Warn(msg, append([]any{"holds_ended", len(lap.lost), "bound", le.reach()}, stalled...)...)
	for _, h := range lap.lost {
		if mutant.On(mutant.LossLate) {
			time.Sleep(200 * time.Millisecond) // seeded bug: the holders are told late
		}
		h.lose(ErrLeaseExpired)
	}
}

// lapsing notes a lapse beginning now, unless one is on: from the start
// of the stall this process resumes from, if its deadline passed in one
// (mono's watch). It returns that stall.
func (le *Lease) lapsing() (mono.Stall, bool) {
	at, stall := mono.Now(), time.Duration(0)
	st, ok := stalledBefore(at.Std())
	if ok {
		at, stall = mono.Of(st.From), st.Len()
	}
	if le.lapsedAt.CompareAndSwap(0, int64(at)) {
		le.lapseStall.Store(int64(stall))
	}
	return st, ok
}

// stalledFor is the attribute of the stall the latest lapse began with
// (nil: none).
func (le *Lease) stalledFor() []any {
	if d := le.lapseStall.Load(); d != 0 {
		return []any{"stalled_for", time.Duration(d).Round(time.Millisecond)}
	}
	return nil
}

// stop ends the timer; the renewer ends with the session's context. A
// lapse under way ends with the floor, and is told so, as an outage is.
func (le *Lease) stop() {
	le.s.st.mu.Lock()
	if le.timer != nil {
		le.timer.Stop()
	}
	le.s.st.mu.Unlock()
	stalled := le.stalledFor()
	if at := le.lapsedAt.Swap(0); at != 0 {
		le.s.log.Warn("session closed before it was confirmed with the leader again",
			append([]any{"after", mono.Now().Std().Sub(mono.Time(at).Std()).Round(time.Millisecond), "bound", le.reach()}, stalled...)...)
	}
}

// confirmed tells the end of a lapse that began at lapsed (mono.Time; 0:
// none), which a renewal just ended (renewLocked).
func (le *Lease) confirmed(lapsed int64) {
	if lapsed == 0 || mutant.On(mutant.LapseEndUntold) { // seeded bug: the lapse's end untold
		return
	}
	le.s.log.Warn("session confirmed with the leader again: locks can be granted",
		append([]any{"after", mono.Now().Std().Sub(mono.Time(lapsed).Std()).Round(time.Millisecond), "bound", le.reach()}, le.stalledFor()...)...)
}

// Stats reports the lease's counters, as package zklock's LeaseStats
// documents them: the grants that waited for a proof, the lapses with
// holds, the proofs answered too late to renew it and the latest one's
// round trip, the reach (R) and the session timeout.
func (le *Lease) Stats() (waits, lapses, lateProofs int64, lastLateRoundTrip, reach, timeout time.Duration) {
	return le.waits.Load(), le.lapses.Load(), le.late.Load(), time.Duration(le.lateRTT.Load()), le.reach(), le.Timeout()
}

// noteGranted warns, once per value, when the server granted a session
// timeout other than the one Dial asked for (it bounds it between 2 and
// 20 of its ticks): a crashed holder's lock then passes on after the
// granted timeout, and the loss bounds derive from it. Under Wrap the
// caller's connection asked, not the session. It warns too when the
// servers' declared tickTime is more than half the granted timeout: the
// lease's argument needs the leader to hear of the session within the
// timeout's first half (lease.go), and cannot show loss before grant.
func (le *Lease) noteGranted() {
	s := le.s
	granted := le.Timeout()
	if s.link.warned.Swap(int64(granted)) == int64(granted) {
		return
	}
	if s.tap != nil && granted != s.cfg.Timeout {
		s.log.Warn("ZooKeeper granted another session timeout than the one asked for",
			"asked", s.cfg.Timeout, "granted", granted)
	}
	if tick := s.cfg.ServerTick; tick > 0 && 2*tick > granted {
		s.log.Warn("the servers' tickTime is more than half the session timeout: a follower may report this session to the leader too seldom for the lease to show loss before grant; ask a session timeout of at least two ticks",
			"tick", tick, "session_timeout", granted)
	}
}

// maxRoundTrip is the longest round trip with which a held lock's
// session keeps its lease ahead: a chain spans three round trips (j's,
// k's, l's), π, and up to two periods, and must leave T/16 for a grant
// (renew.go): T/12 with the tick unknown. Above it a proof may renew
// nothing, as its chain began too long before its answer, and a held
// lock's lease may lapse (lapse), whichever way the pings fall.
func (le *Lease) maxRoundTrip() time.Duration {
	t := le.Timeout()
	return max(le.reach()-le.gap()-2*le.period()-t/16, 0) / 3
}

// grantRoundTrip is the longest round trip with which a chain can still
// renew the lease for a grant: a grant needs the touch shown less than
// 7T/8 − T/16 old (grantableLocked), and a chain's is at least π and
// three round trips old as its l is answered: T/6 with the tick unknown.
// Between maxRoundTrip and it, a grant comes once a chain fits, if one
// does (the pings' and syncs' timing decides); above it only a
// connection's handshake renews the lease for a grant.
func (le *Lease) grantRoundTrip() time.Duration {
	t := le.Timeout()
	return max(t*7/8-t/16-le.gap(), 0) / 3
}

// untoldLocked notes that the session's connection, seen in state zs, may
// be about to write a connect request, whose answer will tell its grant
// (untoldCap): from go-zookeeper's StateConnected, which it tells before
// it writes the request, under Dial; under Wrap, whose floor learns of a
// state as it reads it, from when it last saw the session up (the drop,
// and any request after it, came later). The timer is set to the new
// deadline. st.mu is held.
func (le *Lease) untoldLocked(zs zk.State) {
	if !le.s.cfg.ExpiryOnly || !le.untoldSince.IsZero() {
		return
	}
	switch {
	case le.s.tap == nil:
		le.untoldSince = le.upSeen
	case zs == zk.StateConnected:
		le.untoldSince = time.Now()
	default:
		return
	}
	le.armLocked()
}
