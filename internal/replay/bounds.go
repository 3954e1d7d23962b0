package replay

import (
	"fmt"
	"sort"
	"time"

	"github.com/tierlock/tierlock/internal/trace"
)

// The lease's bounds, derived from what the server said, what the wire
// saw and the lease's documented rule, never read from a value the code
// computed (zklock/internal/session/lease.go argues the rule):
//
//   - T, the session timeout, is the one the server granted in its answer
//     to the connect request (a handshake step: read from the answer's
//     bytes at the wire under zklock.Connect, from go-zookeeper's
//     connection under NewSession), per session;
//   - R, the lease's reach, is 7T/8, or 9T/8 under the expiry-only policy
//     (the session step);
//   - π, the gap, is 5/8 of the servers' tickTime: the one the session
//     step declares (zklock.WithServerTickTime), else T/2;
//   - a touch is a packet written at w that the server is shown to have
//     touched by c: under Connect a touch step (the tap confirms one as
//     each reply is read, pings' included, AddAuth's and watch events
//     excluded), under NewSession, whose wire is not seen, a successful
//     sync or write of the floor's, w its hand-over (its send step) and c
//     its answer;
//   - a proof's write time is, under Connect, the start of the first write
//     of a request (a ping's is not one) on the connection after the
//     request was handed to the client (no later than its own write; none
//     before its answer: not dated), under NewSession its hand-over.
//
// A renew (At the write time of the touch it counts from, Until its
// deadline, both the code's) is accepted when Until <= At + R, and At is
// shown to be a touch at the leader by one of:
//
//   - a handshake: the server's answer, read at the wire, giving the
//     renew's session to a connect request written at or after At;
//   - a chain: a proof l of the session answered with success, handed over
//     after the answer to another, k; and a touch confirmed by w_k − π (w_k
//     k's write time) written at or after At.
//
// both recorded before the renew. The deadline the replay then holds the
// holds to is the code's: no later than the rule's, so stricter.

// touch is a packet written at w seen touched by c; best is the latest w
// of the touches confirmed no later than this one (its prefix in c
// order).
type touch struct{ w, c, best int64 }

// clockNoise is how much later than the replay's date of a write the
// code's may be, with session timeout T: the code keeps a touch's times on
// the monotonic clock (internal/mono), the recorder may read its own
// clock a moment apart. A microsecond, nothing
// next to the lease's margin (T/8), and at most a millionth of T, so that
// traces on a logical clock (the model's, hand-made ones) get none.
func clockNoise(T int64) int64 { return min(int64(time.Microsecond), T>>20) }

// keepWrites bounds the writes and touches a session keeps: a request in
// flight is written within the last few thousand (the code's bound on
// requests in flight is 2,048), and a chain's touch is at most a session
// timeout older than its renew; an older one dropped only makes the
// replay stricter, never looser.
const keepWrites = 1 << 16

// handshake applies the server's answer to a connect request: the session
// it granted, the session timeout it granted with it, and, read at the
// wire, when its request was written. An answer with no session (the
// session expired) grants nothing.
func (s *session) handshake(st trace.Step) {
	if st.Note == trace.HandshakeProbe {
		// The least timeout a server grants: its tick is at most half.
		if s.probed == 0 || st.Timeout/2 < s.probed {
			s.probed = st.Timeout / 2
		}
		return
	}
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
		if w, ok := s.shook[st.Owner]; !ok || st.At > w {
			s.shook[st.Owner] = st.At
		}
	}
}

// opPing is ZooKeeper's ping opcode.
const opPing = 11

// wrote is a request's write on the session's connection: when it began,
// and the key of the tap's waiter it told ("" none).
type wrote struct {
	at  int64
	key string
}

// wrote notes a write's start (its At) on the session's connection; a
// ping's is not one: it is go-zookeeper's own, written outside the order
// of its requests, and the tap dates no proof by it.
func (s *session) wrote(st trace.Step) {
	if st.N == opPing {
		return
	}
	if len(s.writes) == 2*keepWrites {
		s.writes = append(s.writes[:0], s.writes[keepWrites:]...)
	}
	s.writes = append(s.writes, wrote{at: st.At, key: st.Path})
}

// touchSeen notes a touch: a packet written at w seen touched by c. The
// touches are kept in the order of c, which they are recorded in but for
// two connections' replies read at once.
func (s *session) touchSeen(w, c int64) {
	if len(s.touches) == 2*keepWrites {
		s.touches = append(s.touches[:0], s.touches[keepWrites:]...)
	}
	i := len(s.touches)
	for i > 0 && s.touches[i-1].c > c {
		i--
	}
	s.touches = append(s.touches, touch{})
	copy(s.touches[i+1:], s.touches[i:])
	s.touches[i] = touch{w: w, c: c}
	for ; i < len(s.touches); i++ {
		best := s.touches[i].w
		if i > 0 {
			best = max(best, s.touches[i-1].best)
		}
		s.touches[i].best = best
	}
}

// touchBy returns the latest write time of a touch confirmed by x.
func (s *session) touchBy(x int64) (w int64, ok bool) {
	i := sort.Search(len(s.touches), func(i int) bool { return s.touches[i].c > x })
	if i == 0 {
		return 0, false
	}
	return s.touches[i-1].best, true
}

// written is a proof's write time as the wire dates it, for request r
// answered at answered: under Connect its own write, the first after its
// sending that told a waiter of its key, else (no waiter: a session
// without pipelining) the start of the first write after its sending (ok
// false when a recorded session shows none up to the answer: the request
// cannot have been answered); under NewSession, whose writes are not
// seen, its sending itself.
func (s *session) written(r request, answered int64) (w int64, ok bool) {
	if !s.tapped {
		return r.t, true
	}
	first := sort.Search(len(s.writes), func(i int) bool { return s.writes[i].at > r.t })
	if first == len(s.writes) || s.writes[first].at > answered {
		return 0, false
	}
	for _, x := range s.writes[first:] {
		if x.at > answered {
			break
		}
		if x.key != "" && x.key == r.path {
			return x.at, true
		}
	}
	return s.writes[first].at, true
}

// proved notes a successful write's or sync's answer (Lease.proved), the
// answer to s.answering: under NewSession a touch; a chain's l, closing
// the chain of the latest k answered before it was handed over; and a k
// for the proofs handed over after it.
func (s *session) proved(st trace.Step) {
	r := s.answering
	if !s.tapped {
		s.touchSeen(r.t, st.T)
	}
	if r.sid == 0 || r.sid != s.sid || st.Sid != s.sid {
		return // a chain is of one session's proofs (lease.reset)
	}
	if r.k >= 0 {
		s.chainK = max(s.chainK, r.k)
	}
	if w, ok := s.written(r, st.T); ok {
		s.lastK = max(s.lastK, w)
	}
}

// reach is R for a session timeout T, by the session's policy.
func (s *session) reach(T int64) int64 {
	if s.expiryOnly {
		return T + T/8
	}
	return T * 7 / 8
}

// gap is π for session sid: 5/8 of the tick the session was told, else of
// the tick a probe read (half the least a server grants anyone), else of
// half the least the servers granted it (members share one tickTime and
// grant no less than two of its ticks: lease.go's tick), a tick untold by
// either of two sessions on one connection counting too: the larger gap.
func (s *session) gap(sid int64) int64 {
	tick := s.tick
	if s.untold || tick == 0 {
		untold := s.server[sid] / 2
		if s.probed > 0 {
			untold = min(untold, s.probed)
		}
		tick = max(tick, untold)
	}
	return tick * 5 / 8
}

// renew is the lease's "lease[q] = 1": the renew's session is the current
// one, its deadline is at most R past the touch it counts from, from the
// timeout the server granted, and that touch is shown at the leader by a
// handshake or a chain recorded before it.
func (s *session) renew(st trace.Step) error {
	// proved: "rc[q] < MAXN && zsid[q] == sid[q] && !expired[q] -> lease[q] = 1"
	if st.Owner != s.sid {
		return refusef("a renew of session %d while the session is %d (zsid[q] == sid[q])", st.Owner, s.sid)
	}
	T, ok := s.server[st.Owner]
	if !ok {
		return refusef("a renew of session %d, whose timeout no answer of the server's to a connect request "+
			"(handshake) gave: the lease's bound cannot be derived", st.Owner)
	}
	if r := s.reach(T); st.Until > st.At+r+clockNoise(T) {
		return refusef("a renew to %s past the touch it counts from (written %s), where the reach R is %s "+
			"(%s of the session timeout %s the server granted; lease.go): the leader may expire the session T "+
			"after that touch", dur(st.Until-st.At-r), dur(st.At), dur(r), s.fraction(), dur(T))
	}
	if err := s.shown(st, T); err != nil {
		return err
	}
	if s.lease && st.T > s.deadline {
		s.expireSpans(s.deadline) // the deadline passed before this renew came
	}
	s.lease, s.deadline = true, st.Until
	return nil
}

// shown checks that the touch renew st counts from is shown at the
// leader: by a handshake of its session whose connect request was written
// at or after it, or by a chain (bounds.go's rule).
func (s *session) shown(st trace.Step, T int64) error {
	noise := clockNoise(T)
	hs, shook := s.shook[st.Owner]
	if shook && st.At <= hs+noise {
		s.c.res.Renews.Handshake++
		return nil
	}
	pi := s.gap(st.Owner)
	j, ok := s.touchBy(s.chainK - pi + noise)
	if s.chainK >= 0 && ok && st.At <= j+noise {
		s.c.res.Renews.Chain++
		return nil
	}
	why := fmt.Sprintf("a renew counted from a touch written at %s, which no handshake nor chain shows at the leader "+
		"(lease.go): ", dur(st.At))
	if shook {
		why += fmt.Sprintf("the latest connect request answered with session %d was written at %s", st.Owner, dur(hs))
	} else {
		why += fmt.Sprintf("no answer to a connect request read at the wire gave session %d", st.Owner)
	}
	if s.chainK < 0 {
		return refuse(why + "; no chain: no proof of the session (a sync or write answered with success) was " +
			"handed over after another proof's answer (its k)")
	}
	why += fmt.Sprintf("; the latest chain's k was written at %s, and ", dur(s.chainK))
	if ok {
		why += fmt.Sprintf("the latest touch confirmed by %s", dur(s.chainK-pi))
	} else {
		why += fmt.Sprintf("no touch was confirmed by %s", dur(s.chainK-pi))
	}
	why += fmt.Sprintf(" (w_k − π, π = %s: 5/8 of the servers' tick, as told, else T/2)", dur(pi))
	if ok {
		why += " was written at " + dur(j)
	}
	if jk, ok := s.touchBy(s.chainK); ok && st.At <= jk+noise {
		why += "; a touch written then was confirmed only after w_k − π: k must be written a ping interval " +
			"after its touch is seen (the gap)"
	}
	return refuse(why)
}

// fraction names R's share of T under the session's policy.
func (s *session) fraction() string {
	if s.expiryOnly {
		return "9/8, under the expiry-only policy,"
	}
	return "7/8"
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
