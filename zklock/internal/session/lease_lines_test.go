package session

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// (e), on the log's side: each outage and each lapse of the lease told
// once when it begins and once when it ends, at the moment it does, as
// the double saw them (the floor's Warn lines, kept by lineHandler).

// The lines' beginnings (outage.go, lease.go).
const (
	outageBegun  = "no connection to ZooKeeper: "
	outageOver   = "connected to ZooKeeper"
	outageClosed = "no connection to ZooKeeper until"
	lapseBegun   = "session not confirmed with the leader in time"
	lapseOver    = "session confirmed with the leader again"
	lapseClosed  = "session closed before it was confirmed with the leader again"
)

// linesAt returns when the floor logged a line beginning with one of pre.
func (w *world) linesAt(pre ...string) []time.Duration {
	var at []time.Duration
	for _, l := range w.lines {
		for _, p := range pre {
			if strings.HasPrefix(l.msg, p) {
				at = append(at, l.at)
				break
			}
		}
	}
	return at
}

// closedAt is when Close began (never: it did not).
func (w *world) closedAt() time.Duration {
	if w.hist.closeAt < 0 {
		return never
	}
	return w.hist.closeAt
}

// checkOutageLines: an outage begins at each drop of a connection with a
// session and ends at the next session, or at Close.
func (w *world) checkOutageLines(add func(string, ...any)) {
	closed := w.closedAt()
	var begins, ends []time.Duration
	for _, d := range w.seen.drops {
		if d < closed {
			begins = append(begins, d)
		}
	}
	for _, u := range w.seen.ups[min(1, len(w.seen.ups)):] {
		if u.from < closed {
			ends = append(ends, u.from)
		}
	}
	if closed != never && !w.upAt(closed, 0) && len(w.seen.ups) > 0 {
		ends = append(ends, closed) // an outage under way: Close ends it
	}
	told, over := w.linesAt(outageBegun), w.linesAt(outageOver, outageClosed)
	if !slices.Equal(told, begins) || !slices.Equal(over, ends) {
		add("(e) outages told begun at %v and over at %v; they began at %v and ended at %v", told, over, begins, ends)
	}
}

// checkLapseLines: a lapse begins where the lease ran out with holds (the
// first of its ErrLeaseExpired losses) and ends at the first proof after
// it that puts the lease ahead again (lease.go's rule), or at Close.
func (w *world) checkLapseLines(add func(string, ...any)) {
	begins, ends := w.lapses()
	told, over := w.linesAt(lapseBegun), w.linesAt(lapseOver, lapseClosed)
	w.cover(coverLapseOver, len(over) > 0)
	if !slices.Equal(told, begins) || !slices.Equal(over, ends) {
		add("(e) lapses told begun at %v and over at %v; they began at %v and ended at %v", told, over, begins, ends)
	}
}

// lapses is when the lease's lapses began and ended, as the double saw
// them: the holds' ErrLeaseExpired losses, and the proofs that renewed.
func (w *world) lapses() (begins, ends []time.Duration) {
	closed := w.closedAt()
	var lost, renewed []time.Duration
	for _, a := range w.members {
		for _, l := range a.loses {
			if l.cause == ErrLeaseExpired {
				lost = append(lost, l.at)
			}
		}
	}
	for _, u := range w.seen.ups {
		for _, p := range w.renewals(u.sid, false) {
			if p.until > p.at && p.at < closed {
				renewed = append(renewed, p.at)
			}
		}
	}
	slices.Sort(lost)
	slices.Sort(renewed)
	for i := 0; i < len(lost); {
		start, end := lost[i], closed
		if j, _ := slices.BinarySearch(renewed, start+1); j < len(renewed) && renewed[j] < closed {
			end = renewed[j]
		}
		begins = append(begins, start)
		if end != never {
			ends = append(ends, end)
		}
		for i < len(lost) && lost[i] < end {
			i++
		}
	}
	return begins, ends
}

// The moments the checks are about: TestLeaseExplore fails if a run of
// 10,000 schedules or more reached one of them in none (as the write
// path's cover_test.go does).
type leasePoint int

const (
	coverNewSession        leasePoint = iota // a reconnection in a new session (the expiry learnt)
	coverSameSession                         // a reconnection in the same session
	coverExpiredConnected                    // the leader expired a session whose client was connected
	coverRefusedExpired                      // a request reached the leader after its session expired
	coverOrphaned                            // a follower gave up on its leader and dropped the client
	coverReadDeadline                        // a drop at the read deadline
	coverStalled                             // a request held by a stalled socket
	coverBlackholed                          // a write lost in a blackhole until it ended
	coverAnswerLost                          // a success whose answer the drop lost
	coverLate                                // a late answer or a late processing
	coverHeldAtLink                          // a sync waited for the link to the leader
	coverTxnProof                            // a transaction applied
	coverGoneTold                            // Grant told ErrNodeGone
	coverGrantClosed                         // Grant told ErrClosed
	coverGrantCancelled                      // Grant told its ctx's error
	coverDisconnectedTold                    // a hold lost: ErrDisconnected
	coverLapse                               // a hold lost: ErrLeaseExpired
	coverClosedTold                          // a hold lost: ErrClosed
	coverLapseOver                           // a lapse told over
	coverHealthy                             // a healthy schedule
	coverGrantWaited                         // a grant waited for a sync (Lease.Stats: waits)
	coverLateProof                           // a proof too late to renew (Lease.Stats: late proofs)
	coverKeptDown                            // under ExpiryOnly, a hold that outlived a drop
	coverOneWay                              // one stream between the servers cut, the other not
	coverExpiredAfterProof                   // the leader expired a session after answering a request of it newer than its last touch
	coverProvedUnheard                       // the leader answered a request of a session it had not heard of for 3T/4
	coverNegotiatedUp                        // the server granted more than asked
	coverNegotiatedDown                      // the server granted less than asked
	coverWrapGrant                           // a grant under Wrap
	coverHeldAtNewSession                    // a hold standing as its client connected in a new session
	nLeasePoints
)

var leasePointNames = [nLeasePoints]string{"new session", "same session", "expired while connected",
	"reached the leader expired", "follower gave up", "read deadline", "stalled request", "blackholed write",
	"answer lost", "late answer", "sync held at the link", "transaction applied", "told node gone",
	"grant told closed", "grant told ctx ended", "lost: disconnected", "lost: lease lapsed",
	"lost: closed", "lapse told over", "healthy schedule", "grant waited for a sync", "late proof",
	"hold kept across a drop", "one stream cut", "expired after a newer proof",
	"answered unheard for 3T/4", "granted more than asked", "granted less than asked", "grant under Wrap", "held at a new session"}

var leaseCoverage [nLeasePoints]atomic.Int64

// cover counts moment p when cond holds.
func (w *world) cover(p leasePoint, cond bool) {
	if cond {
		leaseCoverage[p].Add(1)
	}
}

// coverSchedule counts the moments seen only in the whole schedule.
func (w *world) coverSchedule() {
	waits, _, late, _, _, _ := w.s.lease.Stats()
	w.cover(coverGrantWaited, waits > 0)
	w.cover(coverLateProof, late > 0)
	w.cover(coverNegotiatedUp, w.cfg.T > w.cfg.asked)
	w.cover(coverNegotiatedDown, w.cfg.T < w.cfg.asked)
	for _, a := range w.members {
		w.cover(coverWrapGrant, w.cfg.wrap && a.granted())
		for _, l := range w.hist.learnt {
			w.cover(coverHeldAtNewSession, a.granted() && l.id == a.owner && a.returned <= l.at && a.ended() >= l.at)
		}
	}
	if !w.cfg.expiryOnly {
		return
	}
	for _, a := range w.members {
		for _, d := range w.hist.drops {
			w.cover(coverKeptDown, a.granted() && a.returned < d && a.ended() > d)
		}
	}
}

// uncoveredLease lists the points no schedule reached, and the counts.
func uncoveredLease() (missing []string, counts string) {
	var b strings.Builder
	for p := range nLeasePoints {
		n := leaseCoverage[p].Load()
		fmt.Fprintf(&b, "%s %d; ", leasePointNames[p], n)
		if n == 0 {
			missing = append(missing, leasePointNames[p])
		}
	}
	return missing, b.String()
}
