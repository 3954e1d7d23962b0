package session

import (
	"time"

	"github.com/tierlock/tierlock/internal/mutant"
	"github.com/tierlock/tierlock/internal/trace"
)

// The lease: loss before grant, whatever the fault.
//
// A holder must be told that it may have lost the lock before any other
// process can be granted it. Watching the client's own connection is not
// enough for that:
//
//   - A follower cut off from the leader keeps answering its clients' pings
//     until syncLimit × tickTime, while the leader, no longer hearing of the
//     session, expires it after the session timeout T and lets the next
//     waiter in. Nothing bounds syncLimit × tickTime by T.
//   - A blocked write delays go-zookeeper's disconnection to about 4/3 T
//     (the send goroutine owns the close), and with an asymmetric
//     partition (the server's traffic arrives, ours does not) the client
//     never disconnects at all.
//
// So the session confirms itself with the leader. Holds are trusted until
// B = T/4 after the send time of the last request that proved the session
// alive at the leader; when that deadline passes without a newer proof,
// every hold of the session is ended (ErrLeaseExpired) and its node given
// up. A grant is made only while the deadline lies ahead.
//
// What proves it. A sync is answered only after a round trip through the
// leader, which refuses it once the session has expired. So is every write:
// the leader checks the session (PrepRequestProcessor's checkSession) for
// every create, delete, setData and multi, exactly as for a forwarded sync,
// and a write that succeeds was forwarded to the leader and committed
// through it after it was sent. Reads are served by the follower alone and
// prove nothing. So every successful write renews the lease (send.go), and
// the session sends a sync, every T/8, only while a lock has a node and no
// write has renewed the lease for that long: a busy session needs no sync.
//
// Why B = T/4 is early enough. The leader expires a session T after it
// last heard of it (rounded up to its next tick, which only delays the
// expiry). It hears of a session through the follower's replies to its
// pings, sent every tickTime/2 while their link works, each listing the
// sessions the follower served since the previous reply. Let s be the send
// time of the last request that proved the session (a sync, or a write);
// its success shows that the link between the follower and the leader
// worked after s. The client's previous request was sent at s − T/8 or
// later (see below); its touch was reported by a ping reply sent within
// tickTime/2 of it, on that same link. So the leader heard of the session
// at s − T/8 − tickTime/2 or later, and cannot expire it before
// s − T/8 − tickTime/2 + T. ZooKeeper grants at least two ticks per session
// timeout, so tickTime/2 ≤ T/4, and the expiry comes after s + 5T/8, while
// our holds end at s + T/4: three eighths of T earlier, before even the
// next holder's grant, which needs the expiry committed and then its own
// watch and listing.
//
// The send time s. Under Dial the wire tap (package wire) records when each
// write to the socket began; a request queued after the tap's count mark
// is written no earlier than the first write after mark, so that write's
// start is taken as s: no later than the server saw our request. And s is
// capped at the start of the write before it plus T/8, which is what makes
// "the previous request was sent at s − T/8 or later" true even when the
// send loop wrote nothing for a while (a stalled socket). Both moves only
// make s earlier, and the deadline with it. Under Wrap there is no
// tap, and s is when the request was queued.
//
// The argument assumes that the follower's ping replies flow whenever a
// request gets through (they share its link, in order: a touch is reported
// ahead of the requests forwarded after it; the lease's explorer drops that
// assumption with -lease.pingreplies, and then refuses the margin: an open
// question, in docs/lease.md, since ZooKeeper 3.8's follower reports its
// touches only in its replies to the leader's pings), that the client's
// monotonic clock and the servers' advance at the same rate within the
// margin, and that this process is not paused for longer than the margin:
// a process stopped by the OS or the garbage collector can outlive its
// session without running the timer. The fencing token is the answer
// there. tier.TestNemesis measures it: with T = 2 s, holders are told at
// about 0.4 s into a partition, the next grant comes at about 2 s.
//
// Under WithLossOnExpiryOnly the deadline is B = 3T/4 instead: holds
// survive disconnections and leader-less stretches shorter than that, and
// by the argument above the next holder can be granted the lock at most
// 3T/4 − 5T/8 = T/8 before this one is told.

func (le *lease) init(s *Floor) {
	le.s = s
	le.kick = make(chan struct{}, 1)
}

// bound is B: how long after the send time of a proof holds stay valid.
func (le *lease) bound() time.Duration {
	t := le.s.timeout()
	if le.s.cfg.ExpiryOnly {
		return t * 3 / 4
	}
	if mutant.On(mutant.BoundHalf) {
		return t / 2 // seeded bug: past the margin of the argument above
	}
	return t / 4
}

// period is how often the session must be proved while a lock has a node.
func (le *lease) period() time.Duration { return le.s.timeout() / 8 }

// validLocked reports whether holds may be granted now: the deadline is
// ahead. s.st.mu is held.
func (le *lease) validLocked(now time.Time) bool { return now.Before(le.deadline) }

// reset forgets the deadline: it was earned by a session that is over.
// s.st.mu is held.
func (le *lease) reset() { le.deadline, le.proofAt = time.Time{}, time.Time{} }

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
	// came back too late to renew the lease: their round trip, from the
	// send, was above Bound. While every round trip is, no lock of the
	// session can be granted, free or not: the network (or the server) is
	// too slow for the session timeout, not the lock held.
	LateProofs int64
	// LastLateRoundTrip is the round trip of the latest late proof.
	LastLateRoundTrip time.Duration
	// Bound is the lease's bound: a quarter of the negotiated session
	// timeout (three quarters under WithLossOnExpiryOnly).
	Bound time.Duration
}

// LeaseStats reports the session's lease counters.
func (s *Floor) LeaseStats() LeaseStats {
	if s == nil {
		return LeaseStats{}
	}
	le := &s.st.lease
	return LeaseStats{Waits: le.waits.Load(), Lapses: le.lapses.Load(), LateProofs: le.late.Load(),
		LastLateRoundTrip: time.Duration(le.lateRTT.Load()), Bound: le.bound()}
}

// lateWarnEvery spaces tooLate's warnings.
const lateWarnEvery = 10 * time.Second

// tooLate notes a proof whose answer came rtt after its send, past the
// lease's bound: it renewed nothing. With every round trip that long, a
// grant waits for ever while the lock may be free, so an operator is told,
// at most every lateWarnEvery, with the round trip and the bound, and
// LeaseStats counts it.
func (le *lease) tooLate(rtt time.Duration) {
	le.late.Add(1)
	le.lateRTT.Store(int64(rtt))
	now := time.Now().UnixNano()
	last := le.warnedAt.Load()
	if now-last < int64(lateWarnEvery) || !le.warnedAt.CompareAndSwap(last, now) {
		return
	}
	le.s.log.Warn("session round trip above the lease's bound: no lock of the session can be granted until it is shorter (a slow network or server, not a held lock)",
		"round_trip", rtt, "bound", le.bound(), "session_timeout", le.s.timeout())
}

// proof is a request that can prove the session alive at the leader: the
// tap's count of writes when it was queued, when it was queued, and the
// session it was queued in.
type proof struct {
	mark int64
	at   time.Time
	id   int64
}

// newProof notes a request about to be queued.
func (s *Floor) newProof() proof {
	p := proof{at: time.Now(), id: s.conn.SessionID()}
	if s.tap != nil {
		p.mark = s.tap.Mark()
	}
	return p
}

// proved renews the lease with p's request, which succeeded: from its send
// time (see the argument above), if it was sent in the current session.
func (s *Floor) proved(p proof) {
	sent, written := p.at, p.at
	if s.tap != nil {
		at, prev, ok := s.tap.FirstWriteAfter(p.mark)
		if !ok {
			return // too many writes since: its send time is not known
		}
		sent, written = at, at
		if cp := prev.Add(s.st.lease.period()); !prev.IsZero() && cp.Before(sent) {
			sent = cp
		}
	}
	if mutant.On(mutant.LeaseFromAnswer) {
		sent = time.Now() // seeded bug: the answer's arrival, not the send
	}
	// A proof that renews nothing because its send time was capped is not
	// late: late is a measured round trip, from the real send, above B.
	late, renewed := s.renewFrom(p, sent)
	if late {
		if rtt := time.Since(written); rtt > s.st.lease.bound() {
			s.st.lease.tooLate(rtt)
		}
	}
	if at := s.st.lease.lapsedAt.Load(); renewed && at != 0 && s.st.lease.lapsedAt.CompareAndSwap(at, 0) {
		if mutant.On(mutant.LapseEndUntold) {
			return // seeded bug: the lapse's end untold
		}
		s.log.Warn("session confirmed with the leader again: locks can be granted",
			"after", time.Since(time.Unix(0, at)).Round(time.Millisecond), "bound", s.st.lease.bound())
	}
}

// renewFrom moves the lease's deadline to sent + B for p's proof, if it
// was sent in the current session; it reports a proof too late to renew
// anything (its deadline already past), and a lease renewed into the
// future.
func (s *Floor) renewFrom(p proof, sent time.Time) (late, renewed bool) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	le := &s.st.lease
	if p.id == 0 || p.id != s.st.sessionID || s.conn.SessionID() != p.id || s.st.closed {
		return false, false
	}
	d := sent.Add(le.bound())
	if d.After(le.deadline) {
		trace.Renewed(s.zc, p.id, sent, d)
		le.deadline = d
		le.armLocked()
	}
	if p.at.After(le.proofAt) {
		le.proofAt = p.at
	}
	late = !d.After(time.Now())
	return late, !late
}

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
	s.st.mu.Unlock()
	trace.Lapsed(s.zc, len(lost))
	if len(lost) > 0 {
		le.lapses.Add(1)
		le.lapsedAt.CompareAndSwap(0, time.Now().UnixNano())
		le.wake() // the renewer proves the session until it is: see renew
		s.log.Warn("session not confirmed with the leader in time: holds end, grants wait until it is", "holds", len(lost), "bound", le.bound())
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
			"after", time.Since(time.Unix(0, at)).Round(time.Millisecond), "bound", le.bound())
	}
}

// timeout is the session timeout the loss bounds derive from: the one the
// server negotiated when known (from the connect response under Dial,
// from the connection under Wrap), else the one asked for; the
// smaller of the two, which only shortens the bounds.
func (s *Floor) timeout() time.Duration {
	granted := time.Duration(s.link.granted.Load())
	if s.tap != nil {
		granted = s.tap.GrantedTimeout()
	}
	if granted > 0 {
		return min(granted, s.cfg.Timeout)
	}
	return s.cfg.Timeout
}
