package session

import (
	"sync/atomic"
	"time"

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
// what keeps it (its bounds: bounds.go; the proofs: proof.go; the
// renewer: renew.go) and tells of it (its lapse and counters: lapse.go).
// Its fields are guarded by the floor's st.mu but for the atomics.
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
	tickProbed    atomic.Int64 // the servers' tick a probe read (ns; 0: none): tick

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

// reset forgets the deadline and the chain: they were earned by a session
// that is over. st.mu is held.
func (le *Lease) reset() {
	le.touched, le.proofAt = time.Time{}, time.Time{}
	le.lastK.Store(0)
}

// wake asks the renewer to look at the session again.
func (le *Lease) wake() {
	select {
	case le.kick <- struct{}{}:
	default:
	}
}
