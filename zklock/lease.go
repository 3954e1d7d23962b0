package zklock

import (
	"sync/atomic"
	"time"
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
// So the session confirms itself with the leader: while any of its locks
// has a node (queued or held), it sends a sync every T/8, and a sync is
// answered only after a round trip through the leader, which refuses it
// once the session has expired. Holds are trusted until B = T/4 after the
// send time of the last sync that succeeded; when that deadline passes
// without a newer success, every hold of the session is ended
// (ErrLeaseExpired) and its node given up. A grant is made only while the
// deadline lies ahead.
//
// Why B = T/4 is early enough. The leader expires a session T after it
// last heard of it (rounded up to its next tick, which only delays the
// expiry). It hears of a session through the follower's replies to its
// pings, sent every tickTime/2 while their link works, each listing the
// sessions the follower served since the previous reply. Our client sends
// the follower something at least every T/8 while a lock has a node (these
// syncs; its pings come every T/3). Let s be the send time of the last sync
// that succeeded. Its success shows that the link between the follower and
// the leader worked after s; the touch of the client's previous request
// (sent at s − T/8 or later) was reported by a ping reply sent within
// tickTime/2 of it, on that same link. So the leader heard of the session
// at s − T/8 − tickTime/2 or later, and cannot expire it before
// s − T/8 − tickTime/2 + T. ZooKeeper grants at least two ticks per session
// timeout, so tickTime/2 ≤ T/4, and the expiry comes after s + 5T/8, while
// our holds end at s + T/4: three eighths of T earlier, before even the
// next holder's grant, which needs the expiry committed and then its own
// watch and listing. The argument assumes that the follower's ping replies
// flow whenever a sync gets through (they share its link, in order), that
// the client's monotonic clock and the servers' advance at the same rate
// within the margin, and that this process is not paused for longer than
// the margin: a process stopped by the OS or the garbage collector can
// outlive its session without running the timer. The fencing token is the
// answer there. tier.TestNemesis measures it: with T = 2 s, holders are
// told at about 0.4 s into a partition, the next grant comes at about 2 s.
//
// Under WithLossOnExpiryOnly the deadline is B = 3T/4 instead: holds
// survive disconnections and leader-less stretches shorter than that, and
// by the argument above the next holder can be granted the lock at most
// 3T/4 − 5T/8 = T/8 before this one is told.

// lease is the deadline until which a session's holds are trusted; its
// fields are guarded by the Session's mu.
type lease struct {
	s        *Session
	deadline time.Time     // holds are valid until then
	inflight chan struct{} // closed when the sync in flight completes; nil when none
	lastSend time.Time     // when the last sync was sent
	timer    *time.Timer   // fires at the deadline while holds exist
	kick     chan struct{} // wakes the renewer
	stopped  chan struct{} // closed by stop

	waits, lapses atomic.Int64 // see LeaseStats
}

func (le *lease) init(s *Session) {
	le.s = s
	le.kick = make(chan struct{}, 1)
	le.stopped = make(chan struct{})
}

// bound is B: how long after a successful sync was sent holds stay valid.
func (le *lease) bound() time.Duration {
	t := le.s.timeout()
	if le.s.cfg.expiryOnly {
		return t * 3 / 4
	}
	return t / 4
}

// period is how often the renewer confirms the session while needed.
func (le *lease) period() time.Duration { return le.s.timeout() / 8 }

// validLocked reports whether holds may be granted now: the deadline is
// ahead. s.mu is held.
func (le *lease) validLocked(now time.Time) bool { return now.Before(le.deadline) }

// freshLocked reports whether the deadline is far enough ahead that a new
// grant need not ask for a sync. s.mu is held.
func (le *lease) freshLocked(now time.Time) bool {
	return le.deadline.Sub(now) > le.bound()-le.period()
}

// reset forgets the deadline: it was earned by a session that is over.
// s.mu is held.
func (le *lease) reset() { le.deadline = time.Time{} }

// wake asks the renewer to look at the session again.
func (le *lease) wake() {
	select {
	case le.kick <- struct{}{}:
	default:
	}
}

// refresh returns a channel closed once a sync sent no earlier than now
// has completed (successfully or not), sending one unless one is already
// in flight. A sync already in flight was sent earlier, which is as good for
// the lease (the deadline only moves forward) except that it may be slow:
// callers that wait on it and still find the lease stale call refresh
// again.
func (le *lease) refresh() <-chan struct{} {
	s := le.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if le.inflight != nil {
		return le.inflight
	}
	if s.closed {
		return closedChan
	}
	done := make(chan struct{})
	le.inflight = done
	id := s.sessionID
	queued := time.Now()
	le.lastSend = queued
	// The sync's send time is when go-zookeeper wrote it (the wire tap
	// sees the write), not when it was queued: behind a backlog of the
	// session's own requests (thousands of acquisitions pipelined, a
	// starved send loop) it can wait longer than the bound before it is
	// written. The argument above needs two things of the send time s:
	// the server heard from us after s (the write's start is no later than
	// that), and the request before it was sent at s − T/8 or later; so s
	// is capped at the previous write's start plus T/8, which a send loop
	// that stalled, writing nothing for a while, would otherwise break.
	// The tap matches the first sync written after this point: ours, or an
	// earlier one (findOwn's), whose earlier time only shortens the lease.
	// Without a tap, the queueing time.
	var w *wireWaiter
	if s.tap != nil {
		w = s.tap.expect("/", opSync)
	}
	s.goBackground(func() {
		_, err := s.conn.Sync("/")
		sent := queued
		if w != nil {
			if err == nil {
				// A reply means the request was written, but it can
				// overtake the tap's note of the write (the send loop
				// makes it after Write returns): wait for the note.
				select {
				case <-w.sent:
				case <-time.After(time.Second):
				case <-s.ctx.Done(): // closing: the deadline no longer matters
				}
			}
			select {
			case <-w.sent: // w.at and w.prev are written before sent is closed
				sent = w.at
				if !w.prev.IsZero() && w.prev.Add(le.period()).Before(sent) {
					sent = w.prev.Add(le.period())
				}
				sent = later(queued, sent)
			default:
			}
			s.tap.forget(w)
		}
		s.mu.Lock()
		if err == nil && id != 0 && id == s.sessionID && s.conn.SessionID() == id {
			if d := sent.Add(le.bound()); d.After(le.deadline) {
				le.deadline = d
				le.armLocked()
			}
		} else if err != nil {
			s.log.Debug("session not confirmed", "err", err)
		}
		le.inflight = nil
		s.mu.Unlock()
		close(done)
	})
	return done
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// armLocked sets the deadline timer while holds exist. s.mu is held.
func (le *lease) armLocked() {
	if len(le.s.holds) == 0 {
		return
	}
	d := time.Until(le.deadline)
	if le.timer == nil {
		le.timer = time.AfterFunc(d, le.lapse)
	} else {
		le.timer.Reset(d)
	}
}

// lapse runs at the deadline: unless a sync moved it meanwhile, every hold
// of the session ends.
func (le *lease) lapse() {
	s := le.s
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	if now := time.Now(); le.validLocked(now) {
		le.armLocked()
		s.mu.Unlock()
		return
	}
	lost := s.takeHolds()
	s.mu.Unlock()
	if len(lost) > 0 {
		le.lapses.Add(1)
		s.log.Warn("session not confirmed with the leader in time: holds end", "holds", len(lost), "bound", le.bound())
	}
	for _, h := range lost {
		h.lose(ErrLeaseExpired)
	}
}

// renew keeps the lease fresh while any lock of the session has a node.
func (le *lease) renew() {
	s := le.s
	for {
		s.mu.Lock()
		active := len(s.holds) > 0 || s.waiting > 0
		next := le.lastSend.Add(le.period())
		s.mu.Unlock()
		changed := s.stateChanged()
		if active && s.State() != StateConnected {
			// No sync while the connection is down: go-zookeeper would send
			// it first thing on the next connection, racing (in its own code)
			// with the re-arming of watches; the lease lapses meanwhile, as
			// it must.
			select {
			case <-changed:
			case <-s.ctx.Done():
				return
			}
			continue
		}
		if active {
			if wait := time.Until(next); wait > 0 {
				if !sleepCtx(s.ctx, wait) {
					return
				}
				continue
			}
			select {
			case <-le.refresh():
			case <-s.ctx.Done():
				return
			}
			continue
		}
		select {
		case <-le.kick:
		case <-s.ctx.Done():
			return
		}
	}
}

// stop ends the timer; the renewer ends with the session's context.
func (le *lease) stop() {
	le.s.mu.Lock()
	if le.timer != nil {
		le.timer.Stop()
	}
	le.s.mu.Unlock()
}
