package session

import (
	"sync/atomic"
	"time"

	"github.com/tierlock/tierlock/internal/mono"
	"github.com/tierlock/tierlock/internal/mutant"
	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/zklock/internal/wire"
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
// So the session proves to itself that the leader heard of it. Holds are
// trusted until a deadline D = t + R, where t is a moment at which the
// leader is shown to have heard of the session (a touch, below) and the
// reach R is 7T/8; when D passes without a later touch shown, every hold
// of the session ends (ErrLeaseExpired) and its node is given up. A grant
// is made only while D lies ahead.
//
// What ZooKeeper 3.8 does, which the argument rests on (the lease's
// explorer models exactly this, lease_server_test.go):
//
//  1. Touch: every packet a client writes (a request, a ping), but an
//     auth, touches its session at the server it reaches, in the order
//     they arrive, before that server answers it or anything after it.
//     The server answers an auth itself (processPacket), untouched and
//     possibly ahead of packets before it: its reply confirms nothing.
//  2. The leader hears of a session served by a follower only through the
//     follower's replies to its pings: the leader queues a ping to each
//     follower every tickTime/2, on the stream that also carries its
//     answers (syncs, proposals, commits) to that follower; the follower
//     takes that stream in order, answering each ping at once with every
//     touch since its previous answer, and on the stream back forwards its
//     clients' syncs and writes in the order they came. The leader takes
//     the touches of a ping's answer before the requests behind it. A
//     request the follower forwards does not touch the session at the
//     leader.
//  3. The leader refuses a sync or a write (checkSession) of a session it
//     expired, and expires a session no earlier than T after its last
//     touch there, T the least timeout any member granted the session: a
//     touch moves the expiry to itself plus the timeout the member that
//     reported it granted, earlier too (ExpiryQueue.update), and a
//     REVALIDATE re-arms it with the new connection's.
//  4. A connect answer with a session means the leader touched it after
//     the connect request was written: a new session's creation, or the
//     REVALIDATE a follower sends the leader for a session it did not
//     serve, both touch it at the leader.
//
// What shows a touch at the leader.
//
//   - A handshake (4): the connect request of a connection written at w,
//     answered with the session: the leader touched the session after w.
//   - A chain of three packets on one connection: j, written at w_j and
//     seen touched by a_j (a reply to j, or to a packet written after j,
//     came then: 1); k, a sync or a write written at w_k > a_j + π and
//     answered with success; l, a sync or a write handed to go-zookeeper
//     after k's answer came, and answered with success. Then the leader
//     queued a ping to the follower between a_j and its answer to k (π
//     bounds the leader's ping interval, tickTime/2, with some slack: 2);
//     the follower took that ping after it touched j and before it
//     answered k, so its answer to the ping, with j's touch in it or in an
//     earlier answer, went back ahead of l; the leader took that touch
//     before it took l, and had not expired the session when it took l,
//     or l would have failed (3). So the leader touched the session after
//     w_j. If j, k and l were not all on one connection, the connection
//     that carried l began after a_j, and its handshake touched the
//     session at the leader after that (4): after w_j again.
//
// Either way the leader cannot expire the session before w + T, w the
// write time shown, and D = w + 7T/8 is an eighth of T earlier: before
// even the next holder's grant, which needs the expiry committed and then
// its own watch and listing. The margin covers a late timer and a short
// stop of this process; a longer one (the OS, the garbage collector) can
// outlive the session without running the timer, which the fencing token
// answers.
//
// The touches (j) come from the wire tap under Dial (wire.Touches: every
// reply, go-zookeeper's pings included, confirms the packets before it;
// an auth's, told by its opcode, confirms nothing),
// and the handshakes too. Under Wrap the tap sees nothing: j is one of the
// floor's own syncs and writes, dated by when it was queued, and the
// renewer syncs every T/4 whatever the locks do, a little more often than
// go-zookeeper pings, so that a quiet session has a recent j when a lock
// needs a grant.
//
// π is 5/8 of the server's tickTime, which the client cannot read: the
// server grants no session timeout below two of its ticks (its default
// minSessionTimeout), so tickTime is taken as T/2 unless
// WithServerTickTime says what it is. A server whose minSessionTimeout is
// set below two ticks, serving a session of less than two ticks, breaks
// that; Dial warns when the declared tick says so (checkTick).
//
// In a busy session every write is a k and an l, and go-zookeeper's
// pings and the writes' replies are the j's: no sync is needed. While a
// lock has a node and nothing else proves the session, the renewer syncs
// every period (renew.go), which keeps D at least T/4 ahead. A session
// that was quiet has only go-zookeeper's pings, every T/3, as its j's when
// a lock wakes it: D is then R − π − T/3 − period ahead at the least,
// about T/10 with the tick unknown, until its own syncs are π old.
//
// Under WithLossOnExpiryOnly the reach is 9T/8 instead: holds survive
// disconnections and leader-less stretches shorter than that, and the
// next holder can be granted the lock at most T/8 before this one is told.
// But a reconnection may reach a member that grants less than any before
// it (a rolling change of maxSessionTimeout): its REVALIDATE re-arms the
// leader's expiry with what it grants, at or after the connect request's
// write, before the answer can tell the client (the lease's explorer
// showed a hold 792 ms past the expiry, T 1.98 s cut to 208 ms, the answer
// given up at 2T/3). So from the moment a connection is made until its
// answer tells the grant, D is at most that moment plus 9/8 of the least
// timeout a member can grant (bounds.go: untoldCap): the least a probe was
// granted (tickprobe.go), else two declared ticks; where the floor knows
// neither, the holds end as a server is reached, as the default policy
// ends them at the drop. Under the default policy the drop ended the holds
// already, and no grant is made before the answer. A connection given up
// before its answer keeps the bound until the next answer: it assumes the
// REVALIDATE of the attempt given up reached the leader before the next
// one's, as one follower's stream keeps them (members that forward both
// could order them otherwise, which no test has shown).
//
// The argument also assumes that the client's monotonic clock and the
// servers' advance at the same rate within the margin. Every time it reads
// is on that clock: the ones kept in atomics and rings are stored as
// mono.Time and rebuilt with their monotonic reading, so that a step of
// the wall clock moves no deadline.
//
// The deadline is not kept: D = t + R is computed at each look from the
// latest touch shown (t) and the least timeout granted so far, so that a
// reconnection granted a shorter timeout brings it in at once.

// Lease is the deadline until which a session's holds are trusted, and
// what keeps it (the proofs, the renewer: renew.go) and tells of it (its
// lapse and counters: lapse.go). Its fields are guarded by the floor's
// st.mu but for the atomics.
type Lease struct {
	s        *Floor
	touched  time.Time       // the latest touch at the leader shown: holds are valid until it + R (deadlineLocked)
	proofAt  time.Time       // when the latest proof of the session was queued
	lastK    atomic.Int64    // the write time (mono.Time) of the latest proof answered in the session: a chain's k
	own      wire.Touches    // under Wrap, the floor's own proofs as touches
	syncAt   time.Time       // when the latest sync was queued
	inflight chan struct{}   // closed when the sync in flight completes; nil when none
	written  <-chan struct{} // closed when the sync in flight is written (under Dial; else nil)
	timer    *time.Timer     // fires at the deadline while holds exist
	due      atomic.Int64    // the deadline the timer was last armed for (mono.Time; 0: never armed): aheadAt

	// Under WithLossOnExpiryOnly: no later than the write of the first
	// connect request whose answer has not told its grant yet (zero: none;
	// untoldCap), and under Wrap when the floor last saw the session up.
	untoldSince, upSeen time.Time
	kick                chan struct{} // wakes the renewer

	waits, lapses atomic.Int64 // see Stats
	probed        atomic.Int64 // the servers' tick a probe read (ns; 0: none): tick

	// lapsedAt is when the lease last ran out with holds (mono.Time), until
	// a proof renews it again: the end of that episode is told too. A lapse
	// found as this process resumed from a stall began with the stall:
	// lapsedAt is the stall's start, and lapseStall its length (ns; 0: none).
	lapsedAt   atomic.Int64
	lapseStall atomic.Int64

	// Proofs answered too late to renew anything: see tooLate.
	late     atomic.Int64
	lateRTT  atomic.Int64 // the latest one's round trip, ns
	warnedAt atomic.Int64 // when tooLate last warned (mono.Time)
}

func (le *Lease) init(s *Floor) {
	le.s = s
	le.kick = make(chan struct{}, 1)
}

// validLocked reports whether holds stand at now: the deadline is ahead.
// st.mu is held.
func (le *Lease) validLocked(now time.Time) bool { return now.Before(le.deadlineLocked()) }

// grantableLocked reports whether a hold may be granted at now: the
// deadline is at least T/16 ahead, so that a hold is not granted to lapse
// a moment later (a renewal is a round trip or two away). Under
// WithLossOnExpiryOnly the deadline reaches past the leader's expiry by
// up to T/8, for holds to ride out short failures; a new hold is granted
// only within the default's reach, 7T/8, which ends before it. st.mu is
// held.
func (le *Lease) grantableLocked(now time.Time) bool {
	t := le.Timeout()
	if mutant.On(mutant.GrantWholeReach) {
		return le.validLocked(now.Add(t / 16)) // seeded bug: granted on the whole reach
	}
	if mutant.On(mutant.GrantNoMargin) {
		return le.validLocked(now.Add(le.reach() - t*7/8)) // seeded bug: no margin
	}
	return le.validLocked(now.Add(t/16 + le.reach() - t*7/8))
}

// reset forgets the deadline and the chain: they were earned by a session
// that is over. st.mu is held.
func (le *Lease) reset() {
	le.touched, le.proofAt = time.Time{}, time.Time{}
	le.lastK.Store(0)
}

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
		// Seeded bug: the rule before issue 55, T/4 past the proof's write.
		touched, chained = written.Add(le.Timeout()/4-le.reach()), true
	}
	newK, late, lapsed := le.take(p, written, touched, chained)
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

// take keeps what p, a proof of the current session written at written,
// means: the renewer's period counts from its queueing, and it is the
// chain's k of the proofs queued after it (newK: the latest so far). If
// it closed a chain (chained), the deadline moves to touched + R; late
// says that renewed nothing (the deadline already past), lapsed when the
// lapse it ended began (0: none).
func (le *Lease) take(p proof, written, touched time.Time, chained bool) (newK, late bool, lapsed int64) {
	s := le.s
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if p.id == 0 || p.id != s.st.sessionID {
		return false, false, 0
	}
	le.proofAt = later(le.proofAt, p.at)
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
