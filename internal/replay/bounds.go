package replay

import (
	"sort"
	"time"

	"github.com/tierlock/tierlock/internal/trace"
)

// The lease's bounds, derived from what the server said and from the
// documented policy, never read from a value the code computed
// (zklock/lease.go argues them):
//
//   - T, the session timeout, is the one the server granted in its answer
//     to the connect request (a handshake step: read from the answer's
//     bytes at the wire under zklock.Connect, from go-zookeeper's
//     connection under NewSession), per session;
//   - B is T/4, or 3T/4 under the expiry-only policy (the session step);
//   - a proof's send time s is, under Connect, the start of the first write
//     on the connection after the request was handed to the client (the
//     request's own write or an earlier one: no later than the server can
//     have seen it), capped at the start of the write before that one +
//     T/8 (so that the previous touch of the session was no earlier than
//     s - T/8); under NewSession, whose writes are not seen, the time the
//     request was handed to the client.
//
// A renew's deadline (its Until, the code's) may be earlier than s + B,
// never later; its At, the code's send time, only says which proof it is
// (one answered at or after it). The deadline the replay then holds the
// holds to is the code's: earlier, it is stricter.

// proof is a successful write's or sync's answer, which a renew must
// follow (Floor.proved): its time and session, and what the wire says
// of its send (see sendOf).
type proof struct {
	t, sid int64
	send   int64 // the derived send time, before the cap
	prev   int64 // the start of the write before it, or -1 when none is known
}

// deadline is the latest deadline p justifies with timeout T and bound b.
func (p proof) deadline(T, b int64) int64 {
	s := p.send
	if p.prev >= 0 {
		s = min(s, p.prev+T/8)
	}
	return s + b
}

// clockNoise is how much later than the replay's date of a write the
// code's may be, with session timeout T: time.Now reads the wall clock and
// the monotonic one apart, tens of ns from each other, and the code keeps
// a write's start by its wall clock (the tap's ring of UnixNano) where the
// recorder dates it by the monotonic one. A microsecond, nothing next to
// the lease's margins (3T/8), and at most a millionth of T, so that
// traces on a logical clock (the model's, hand-made ones) get none.
func clockNoise(T int64) int64 { return min(int64(time.Microsecond), T>>20) }

// keepWrites bounds the writes a session keeps: a request in flight is
// written within the last few thousand (the code's bound on requests in
// flight is 2,048), and an older send only makes its proof's derived send
// time later than it could be, never earlier.
const keepWrites = 1 << 16

// handshake applies the server's answer to a connect request: the session
// it granted and the session timeout it granted with it. An answer with no
// session (the session expired) grants nothing.
func (s *session) handshake(st trace.Step) {
	if st.Owner == 0 && st.Sid != 0 {
		s.ended = st.Sid // the server's answer to a reconnection: expired
	}
	if st.Owner == 0 || st.Timeout <= 0 {
		return
	}
	if t, ok := s.server[st.Owner]; !ok || st.Timeout < t {
		s.server[st.Owner] = st.Timeout
	}
	s.timeout = st.Timeout
	if st.Note == trace.HandshakeWire {
		s.tapped = true
	}
}

// wrote notes a write's start (its At) on the session's connection.
func (s *session) wrote(st trace.Step) {
	if len(s.writes) == 2*keepWrites {
		s.writes = append(s.writes[:0], s.writes[keepWrites:]...)
	}
	s.writes = append(s.writes, st.At)
}

// sendOf is what the wire says of the send of a request handed to the
// client at sent and answered at answered: the start of the first write
// after sent and of the write before it (-1: none recorded), or, for a
// session whose writes are not recorded, sent itself. ok is false when a
// recorded session shows no write between the two: the request cannot
// have been answered.
func (s *session) sendOf(sent, answered int64) (send, prev int64, ok bool) {
	if !s.tapped {
		return sent, -1, true
	}
	i := sort.Search(len(s.writes), func(i int) bool { return s.writes[i] > sent })
	if i == len(s.writes) || s.writes[i] > answered {
		return 0, -1, false
	}
	prev = -1
	if i > 0 {
		prev = s.writes[i-1]
	}
	return s.writes[i], prev, true
}

// proved notes a successful write's or sync's answer, which a renew may
// follow (Floor.proved), with its send as the wire dates it (s.sentAt,
// the answered request's hand-over).
func (s *session) proved(st trace.Step) {
	// Proofs whose renew moved nothing are never followed by one: the
	// oldest go. A flood of acquisitions on one session can answer
	// hundreds of writes before the goroutine of one of them records its
	// renew (a 10-minute stress -fault all run needed more than 256).
	const keep = 4096
	if len(s.proofs) == keep {
		s.proofs = append(s.proofs[:0], s.proofs[1:]...)
	}
	p := proof{t: st.T, sid: st.Sid, send: st.T, prev: -1}
	if send, prev, ok := s.sendOf(s.sentAt, st.T); ok {
		p.send, p.prev = send, prev
	} else {
		p.send = -1 // no write to date it by: it justifies no deadline (renew says so)
	}
	s.proofs = append(s.proofs, p)
}

// bound is B for a session timeout T, by the session's policy.
func (s *session) bound(T int64) int64 {
	if s.expiryOnly {
		return T * 3 / 4
	}
	return T / 4
}

// renew is proved(q)'s or the sync's "lease[q] = 1": the proof must be of
// the current session and answered at or after the code's send time, and
// the deadline no later than the proof's send, as the wire dates it, plus
// B, from the timeout the server granted.
func (s *session) renew(st trace.Step) error {
	// proved: "rc[q] < MAXN && zsid[q] == sid[q] && !expired[q] -> lease[q] = 1"
	if st.Owner != s.sid {
		return refusef("a renew by a proof of session %d while the session is %d (zsid[q] == sid[q])", st.Owner, s.sid)
	}
	T, ok := s.server[st.Owner]
	if !ok {
		return refusef("a renew of session %d, whose timeout no answer of the server's to a connect request "+
			"(handshake) gave: the lease's bound cannot be derived", st.Owner)
	}
	b := s.bound(T)
	i, first := s.proofFor(st, T, b)
	switch {
	case first < 0:
		return refusef("a renew counted from %d, with no write's or sync's answer of the session at or after it: "+
			"the lease counts from the proof's send, not its answer (proved(q))", st.At)
	case i < 0:
		p := s.proofs[first]
		if p.send < 0 {
			return refuse("a renew by a proof answered with no write on the connection since it was sent: " +
				"the wire does not date its send")
		}
		return refusef("a renew to %s past its proof's send as the wire dates it (%s; answered %s), where B is %s "+
			"(%s of the session timeout %s the server granted; lease.go)", dur(st.Until-p.deadline(T, 0)),
			dur(p.deadline(T, 0)), dur(p.t), dur(b), s.fraction(), dur(T))
	}
	s.proofs = append(s.proofs[:i], s.proofs[i+1:]...)
	if s.lease && st.T > s.deadline {
		s.expireSpans(s.deadline) // the deadline passed before this proof came
	}
	s.lease, s.deadline = true, st.Until
	return nil
}

// proofFor returns the index of the proof renew st takes, -1 when none
// justifies its deadline, and of the first answered at or after its send
// time, -1 when none was. Of the proofs that justify the deadline, it is
// the one that justifies it with the least to spare: its own, whose write
// the code dated too, unless another's is as good; a proof sent later may
// be the only one a later renew can use (answers come in the order the
// session's requests were sent, renews in the order their goroutines get
// to run, which a flood of acquisitions on one session scrambles).
func (s *session) proofFor(st trace.Step, T, b int64) (i, first int) {
	i, first = -1, -1
	for k, p := range s.proofs {
		if p.sid != st.Owner || p.t < st.At {
			continue
		}
		if first < 0 {
			first = k
		}
		d := p.deadline(T, b)
		if p.send >= 0 && st.Until <= d+clockNoise(T) && (i < 0 || d < s.proofs[i].deadline(T, b)) {
			i = k
		}
	}
	return i, first
}

// fraction names B's share of T under the session's policy.
func (s *session) fraction() string {
	if s.expiryOnly {
		return "3/4, expiry-only"
	}
	return "1/4"
}

// dur words a duration or a time of the trace's clock (ns), to the
// microsecond above a millisecond.
func dur(ns int64) string {
	d := time.Duration(ns)
	if d > time.Millisecond || d < -time.Millisecond {
		d = d.Round(time.Microsecond)
	}
	return d.String()
}
