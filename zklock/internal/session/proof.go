package session

import (
	"time"

	"github.com/tierlock/tierlock/internal/mono"
	"github.com/tierlock/tierlock/internal/mutant"
	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/zklock/internal/wire"
)

// The proofs: each sync or write of the session that can prove it alive
// at the leader, dated by its write (the wire tap's) and taken when it is
// answered (proved): the chains of touches that renew the lease (lease.go
// has the argument), and the connect answer's handshake.

// proof is a sync or write that can prove the session alive at the
// leader: its waiter (the tap's interest in its write; nil: none), the
// tap's count of writes when it was queued, when it was queued, the
// session it was queued in, and the chain's k it may close (the write time
// of the latest proof answered by then; zero: none).
type proof struct {
	w    *wire.Waiter
	mark int64
	at   time.Time
	id   int64
	k    time.Time
}

// newProof notes a request about to be queued, its write awaited by w.
func (le *Lease) newProof(w *wire.Waiter) proof {
	s := le.s
	p := proof{w: w, at: time.Now(), id: s.conn.SessionID()}
	if k := le.lastK.Load(); k != 0 {
		p.k = mono.Time(k).Std()
	}
	if s.tap != nil {
		p.mark = s.tap.Mark()
	}
	return p
}

// writtenAt dates p's write, under Dial: its own, as its waiter saw it
// begin (a backlog ahead of it does not age it: TestSyncDatedByItsOwnWrite);
// with no waiter (WithoutPipelining), the first write of a request after
// its queueing, no later than its own in go-zookeeper's order. A ping
// dates nothing (wire.TestPingDatesNoProof).
func (le *Lease) writtenAt(p proof) (time.Time, bool) {
	if p.w != nil {
		if at, ok := p.w.WrittenAt(); ok {
			return at, true
		}
	}
	return le.s.tap.FirstWriteAfter(p.mark)
}

// touches is where the floor learns of touches: the tap's record under
// Dial, its own proofs' under Wrap.
func (le *Lease) touches() *wire.Touches {
	if le.s.tap != nil {
		return le.s.tap.Touches()
	}
	return &le.own
}

// proved takes p's request, which succeeded: it may be a later proof's k,
// and it closes the chain of the k it was queued after, renewing the
// lease from the touch that chain shows (see the argument above). The
// new k and the renewal are taken under one hold of st.mu, and the
// renewer is woken after: a look between the two would see the new k
// against the old deadline and sync at once, where a look a moment later
// would not (TestLeaseExploreWakeOrder).
func (le *Lease) proved(p proof) {
	written := p.at // under Wrap: no later than the write
	if le.s.tap != nil {
		at, ok := le.writtenAt(p)
		if !ok {
			return // too many writes since: its write time is not known
		}
		written = at
	} else {
		le.own.Confirm(p.at, time.Now()) // answered: touched by now
	}
	k := p.k
	if mutant.On(mutant.ChainNoAfter) {
		k = written // seeded bug: l is its own k, not one answered before it
	}
	touched, chained := le.chainFrom(k)
	if mutant.On(mutant.LeaseFromProof) {
		// Seeded bug: the lease T/4 past the proof's write, not from its chain.
		touched, chained = written.Add(le.Timeout()/4-le.reach()), true
	}
	newK, late, lapsed := le.takeProof(p, written, touched, chained)
	if newK {
		le.wake() // a sync may now close a chain (renew.go)
		if h := le.s.cfg.Hooks; h != nil && h.Woke != nil {
			h.Woke()
		}
	}
	if late {
		le.tooLate(k, written)
	}
	le.confirmed(lapsed)
}

// chainFrom returns the touch shown by a chain whose k was written at k
// (zero: no chain): the write time of the latest packet known to have
// been touched by k − π.
func (le *Lease) chainFrom(k time.Time) (time.Time, bool) {
	if k.IsZero() {
		return time.Time{}, false
	}
	if mutant.On(mutant.TouchFromAnswer) {
		return k.Add(-le.gap()), true // seeded bug: dated by when it was seen touched, not written
	}
	return le.touches().Before(k.Add(-le.gap()))
}

// takeProof keeps what p, a proof of the current session written at written,
// means: the renewer's period counts from its queueing, and it is the
// chain's k of the proofs queued after it (newK: the latest so far). If
// it closed a chain (chained), the deadline moves to touched + R; late
// says that renewed nothing (the deadline already past), lapsed when the
// lapse it ended began (0: none).
func (le *Lease) takeProof(p proof, written, touched time.Time, chained bool) (newK, late bool, lapsed int64) {
	s := le.s
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if p.id == 0 || p.id != s.st.sessionID {
		return false, false, 0
	}
	le.proofAt = laterOf(le.proofAt, p.at)
	if w := int64(mono.Of(written)); w > le.lastK.Load() {
		le.lastK.Store(w) // written under st.mu, read by newProof without it
		newK = true
	}
	if !chained || s.conn.SessionID() != p.id || s.st.closed {
		return newK, false, 0
	}
	ahead, lapsed := le.renewLocked(p.id, touched)
	return newK, !ahead, lapsed
}

// laterOf is the later of a and b.
func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// handshake renews the lease from a connect answer that gave session id
// (the argument's 4): the leader touched it after its request was written.
// The answer may have granted a shorter timeout than any before it, which
// brings the deadline in (deadlineLocked): the timer is armed again
// whatever the answer shows. It returns when the lapse it ended began (0:
// none). Under Wrap nothing sees the handshake. st.mu is held.
func (le *Lease) handshake(id int64) (lapsed int64) {
	le.untoldSince = time.Time{} // the grant is told: the tap read the answer (Dial), or noteGrant the connection (Wrap)
	if le.s.tap == nil {
		le.upSeen = time.Now()
	} else if h, ok := le.s.tap.LastHandshake(); ok && h.SessionID == id {
		_, lapsed = le.renewLocked(id, h.Written)
	}
	if lapsed == 0 && le.deadlineLocked().After(time.Now()) {
		lapsed = le.lapsedAt.Swap(0) // a lapse the untold grant's bound began ends with it
	}
	if !le.touched.IsZero() {
		trace.Renewed(le.s.zc, id, le.touched, le.deadlineLocked())
	}
	le.armLocked()
	return lapsed
}

// renewLocked moves the latest touch shown to touched if that is later,
// and reports whether the deadline lies ahead and, if that ends a lapse
// (the lease ran out with holds, no renewal since), when the lapse began
// (0: none). The lapse's end is taken here, under s.st.mu as its start is
// (lapse), so that the renewer, which reads both, never sees the lease
// renewed and still lapsed. st.mu is held.
func (le *Lease) renewLocked(id int64, touched time.Time) (ahead bool, lapsed int64) {
	if touched.After(le.touched) {
		le.touched = touched
		trace.Renewed(le.s.zc, id, touched, le.deadlineLocked())
		le.armLocked()
	}
	if ahead = le.deadlineLocked().After(time.Now()); ahead {
		lapsed = le.lapsedAt.Swap(0)
	}
	return ahead, lapsed
}

// lateWarnEvery spaces tooLate's warnings.
const lateWarnEvery = 10 * time.Second

// What tooLate tells of grants: no grant is refused for the lease, each
// waits until a proof renews it (Grant); with round trips above
// grantRoundTrip no proof can, but a new connection's handshake.
const (
	lateDelays  = "session round trip too long to keep the lease ahead: a proof answered too late renewed nothing, and grants are delayed until one renews it (a slow network or server, not a held lock)"
	lateRefuses = "session round trip too long for any grant: a proof answered too late renewed nothing, and no lock of the session can be granted while round trips are above max_grant_round_trip, except after a new connection (a slow network or server, not a held lock)"
)

// tooLate notes a proof written at written that renewed nothing, having
// closed the chain of the proof written at k. That is its round trip's
// doing when the round trip is longer than maxRoundTrip and k was the
// proof just before it, written within a round trip and a period of it as
// the renewer's syncs and a busy session's writes are. A proof after a
// quiet spell (an acquisition's create, the sync sent with it) closes a
// chain from before the spell: it renews nothing at any round trip, and
// the next sync mends that, so it is neither counted nor told, whatever
// its round trip. A late one is counted (Stats), and
// an operator told at most every lateWarnEvery, with its round trip and
// the bounds: whether grants are delayed, or cannot be made while round
// trips are that long (grantRoundTrip).
func (le *Lease) tooLate(k, written time.Time) {
	rtt := time.Since(written)
	if rtt <= le.maxRoundTrip() || written.Sub(k) > rtt+le.period() {
		return
	}
	le.late.Add(1)
	le.lateRTT.Store(int64(rtt))
	now := int64(mono.Now())
	last := le.warnedAt.Load()
	if now-last < int64(lateWarnEvery) || !le.warnedAt.CompareAndSwap(last, now) {
		return
	}
	msg, grant := lateDelays, le.grantRoundTrip()
	if rtt > grant {
		msg = lateRefuses
	}
	le.s.log.Warn(msg, "round_trip", rtt, "max_round_trip", le.maxRoundTrip(), "max_grant_round_trip", grant,
		"late_proofs", le.late.Load(), "session_timeout", le.Timeout())
}
