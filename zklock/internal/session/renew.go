package session

import (
	"time"

	"github.com/tierlock/tierlock/internal/closed"
	"github.com/tierlock/tierlock/internal/mono"
	"github.com/tierlock/tierlock/internal/mutant"
	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/zklock/internal/wire"
)

// The lease's renewer (lease.go has the argument): the syncs that prove the
// session while a lock has a node and no write proved it for a period
// (renew, refresh), and every idle period while nothing else does
// (idleEvery): a session's idle cost, four to seven syncs a session
// timeout, the price of a lock granted at once after any quiet spell.

// idleEvery is how often a session with no lock syncs. A lock arriving at
// t is granted on its create's answer when the chain that answer closes
// leaves the deadline T/16 ahead: its k is the latest idle sync, up to a
// period and a round trip before t, and its j a touch answered π before k,
// up to another period earlier (the sync before, or under Dial a ping),
// so D = w_j + 7T/8 ≥ t + 7T/8 − 3P − π − 2rtt. With a round trip up to
// T/32: P = (13T/16 − π − T/16)/3, at most T/4 (more saves little) and at
// least T/32. T/7 with the tick unknown (π = 5T/16); with a probed tick of
// a tenth of T, T/4.
func (le *Lease) idleEvery() time.Duration {
	t := le.Timeout()
	return min(max((t*12/16-le.gap())/3, t/32), t/4)
}

// refresh returns a channel closed once a sync sent no earlier than now
// has completed (successfully or not), sending one unless one is already
// in flight (refreshWritten, which also says when that sync is written). A sync already in flight was sent earlier, which is as good for
// the lease (the deadline only moves forward) except that it may be slow:
// callers that wait on it and still find the lease stale call refresh
// again. The sync is not counted in the session's requests in flight
// (flight.go): it must not wait behind the requests it is to vouch for.
func (le *Lease) refresh() <-chan struct{} {
	done, _ := le.refreshWritten()
	return done
}

// refreshWritten is refresh, and also returns a channel closed once the
// sync is written (nil under Wrap, where that is not seen).
func (le *Lease) refreshWritten() (done, written <-chan struct{}) {
	s := le.s
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if le.inflight != nil {
		return le.inflight, le.written
	}
	if s.st.closed {
		return closed.Chan, closed.Chan
	}
	fin := make(chan struct{})
	le.inflight, le.written = fin, nil
	le.syncAt = time.Now()
	var w *wire.Waiter
	if s.tap != nil {
		w = s.tap.Expect(syncKey, wire.OpSync)
		le.written = w.Sent()
	}
	s.Go(func() {
		if w != nil {
			defer s.tap.Forget(syncKey, w)
		}
		p := le.newProof(w)
		trace.Sent(s.zc, trace.OpSync, syncKey)
		_, err := s.conn.Sync(syncKey)
		trace.Answered(s.zc, trace.OpSync, syncKey, "", err)
		if err == nil {
			le.proved(p)
		} else {
			s.log.Debug("session not confirmed", "err", err)
		}
		s.st.mu.Lock()
		le.inflight, le.written = nil, nil
		s.st.mu.Unlock()
		close(fin)
	})
	return fin, le.written
}

// kAt is the earliest a sync can be queued and help the lease on (zero:
// now): a sync moves the deadline only as the l of a chain whose k was
// written at least π after the chain's touch was seen, a touch newer than
// the one the deadline stands on. When the latest proof answered is such
// a k, a sync now is its l. Else the first newer touch was seen at a, and
// a sync queued before a + π could be neither: it would wait a round trip
// for nothing, and the next one π more. (None newer: a sync now makes one.)
func (le *Lease) kAt() time.Time {
	s := le.s
	s.st.mu.Lock()
	touched := le.touched
	s.st.mu.Unlock()
	if ns := le.lastK.Load(); ns != 0 {
		if j, ok := le.chainFrom(mono.Time(ns).Std()); ok && j.After(touched) {
			return time.Time{}
		}
	}
	a, ok := le.touches().SeenAfter(touched)
	if !ok {
		return time.Time{}
	}
	return a.Add(le.gap())
}

// syncKey is the path the lease's syncs name.
const syncKey = "/"

// renew keeps the lease fresh while any lock of the session has a node: it
// sends a sync when no proof came for a period.
func (le *Lease) renew() {
	s := le.s
	// One timer for the renewer's life, reset at each look (since Go 1.23
	// a Reset timer delivers no value from before the Reset).
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for !s.Closed() {
		s.st.mu.Lock()
		active, due := le.dueLocked()
		s.st.mu.Unlock()
		changed := s.st.changedChan()
		switch {
		case active && s.State() != StateConnected:
			// No sync while the connection is down: go-zookeeper would send
			// it first thing on the next connection, racing (in its own code)
			// with the re-arming of watches; the lease lapses meanwhile, as
			// it must.
			le.idle(changed, nil)
		case active && due > 0:
			t.Reset(due)
			le.idle(changed, t.C)
		case active:
			select {
			case <-le.refresh():
			case <-s.life.ctx.Done():
			}
		default:
			le.idle(changed, nil)
		}
	}
}

// dueLocked reports whether the session must be proved, and in how long
// its next sync is due. st.mu is held.
func (le *Lease) dueLocked() (active bool, due time.Duration) {
	s := le.s
	// After a lapse that ended holds, until a proof tells its end.
	active = len(s.st.holds) > 0 || s.st.waiting > 0 || le.lapsedAt.Load() != 0
	every, locked := le.period(), active
	if !active {
		// While the connection lives, a session with no lock proves
		// itself every idle period (idleEvery), so that a lock that wakes it is
		// granted on its create's answer: that answer closes the chain of
		// the latest idle sync (its k). Without them a quiet session's first grant waited
		// for a sync sent after its create's answer (under Wrap, which
		// sees no handshake, for a chain of its own across π).
		active, every = true, le.idleEvery()
	}
	if mutant.On(mutant.NoRenewal) {
		active = false // seeded bug: the renewer never syncs
	}
	// A sync is due a period after the latest proof, or the latest sync,
	// was queued: timed from the queueing, so that a backlog that delays
	// every write by more than a period still leaves the syncs back to
	// back, and a sync that fails is sent again a period later. At once,
	// while a lock has a node, when the deadline is less than two periods
	// ahead and the chain a sync would close carries it a quarter period
	// further: after a lock woke a quiet session, its first proof's answer
	// makes a k that go-zookeeper's pings, a ping interval before it, start
	// a chain from. (A busy session's next write closes that chain anyway:
	// its deadline is far ahead, and no sync goes.) Not for a session with
	// no lock: its idle syncs chain one period apart by design (idleEvery),
	// and the clause doubled them, each idle sync's answer sending another
	// at once (TestIdleSessionSyncsEveryIdlePeriod).
	if d := le.deadlineLocked(); locked && time.Until(d) < 2*every && le.extension().After(d.Add(every/4)) {
		return true, 0
	}
	return active, time.Until(laterOf(le.proofAt, le.syncAt).Add(every))
}

// extension is the deadline a sync queued now would renew the lease to:
// the chain it closes, its k the latest proof answered (zero: none).
func (le *Lease) extension() time.Time {
	var k time.Time
	if ns := le.lastK.Load(); ns != 0 {
		k = mono.Time(ns).Std()
	}
	touched, ok := le.chainFrom(k)
	if !ok {
		return time.Time{}
	}
	return touched.Add(le.reach())
}

// idle waits for the renewer's next look: a state change, a kick (a lock
// queued), the timer wake (nil: none), or the session's end.
func (le *Lease) idle(changed <-chan struct{}, wake <-chan time.Time) {
	select {
	case <-wake:
	case <-changed:
	case <-le.kick:
	case <-le.s.life.ctx.Done():
	}
}
