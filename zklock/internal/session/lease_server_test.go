package session

import (
	"maps"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/wire"
	"github.com/tierlock/tierlock/zklock/internal/writes/memzk"
)

// The double's servers: the follower the client is connected to and the
// ensemble's leader, and the two streams between them, as ZooKeeper 3.8
// has them (Leader.lead, LearnerHandler, Follower.processPacket,
// Learner.ping, LearnerSessionTracker):
//
//   - Every packet of the client's reaching the follower (a request, a
//     ping) touches its session there: the follower notes it in its touch
//     table.
//   - The leader queues a ping to the follower every tickTime/2 (and up to
//     an eighth of a tick more: its loop waits half a tick, then pings),
//     on the stream down to the follower, which also carries its answers
//     to the follower's forwarded requests and the commit of a session's
//     close. The follower takes that stream in order; it answers a ping at
//     once, on the stream up, with every session of its touch table (which
//     it empties), and a request's answer by making its reply ready.
//   - On the stream up the follower forwards its clients' syncs and writes
//     in the order they came. The leader takes that stream in order: the
//     touches of a ping's answer first (heard: lastHeard is when the leader
//     takes them), then each request, processed in order after a delay.
//     A forwarded request does not touch the session at the leader.
//   - The leader refuses (closes the connection instead of answering) a
//     request of a session it expired. Its expiry queue is ZooKeeper's
//     (ExpiryQueue.update): each touch sets the session's expiry to the
//     touch's time plus the timeout it carries, rounded up past the next
//     tick boundary, earlier than before too; the follower's touches carry
//     the timeout of the connection that made them, a REVALIDATE the one
//     the follower grants the new connection. The session's close goes
//     down the stream: the follower closes the session's connection once
//     it takes it.
//   - A connect in a session (a new one, or the REVALIDATE of one the
//     follower did not serve) touches it at the leader
//     (lease_connect_test.go); the follower takes no connection while
//     either stream is cut. An auth the follower answers itself, at once
//     and untouched.
//   - Either stream may be cut (pt both, pl the one down, pf the one up):
//     what is queued waits, in order. A follower whose stream down carried
//     nothing, or whose stream up was cut, for syncLimit × tickTime drops
//     its clients and takes none until both heal.
//   - The session timeout is negotiated: the member a connection reaches
//     grants the one asked, within its bounds: between 2 and 20 ticks (its
//     defaults; minSession lets a schedule's server grant less than two
//     ticks), or a second member's, set apart (leaseConfig.members).
type server struct {
	tree *memzk.Tree
	next int64
	sess map[int64]*lsess

	touched map[int64]time.Duration // the follower's touch table: sessions touched since its last ping answer, with their connection's timeout
	down    stream                  // leader to follower: pings, answers, closes
	up      stream                  // follower to leader: ping answers, forwarded requests
	lastOut time.Duration           // when the latest item on the stream up reaches the leader
	lastIn  time.Duration           // when the latest item down reaches the follower
	lastPrc time.Duration           // when the leader processes the latest forwarded request
	orphan  bool                    // the follower gave up on the leader (syncLimit)
	pings   int                     // pings the leader queued
}

// stream is one way between the follower and the leader: what is queued
// while it is cut, and until when it is.
type stream struct {
	cutTill time.Duration
	waiting []func() // in order, taken once it heals
}

// cut reports whether the stream is cut at t.
func (s *stream) cut(t time.Duration) bool { return t < s.cutTill }

// lsess is a session as the leader has it.
type lsess struct {
	heard     time.Duration // lastHeard
	expires   time.Duration // when its expiry queue takes it (heard's touch)
	expiredAt time.Duration // -1: alive
	proved    time.Duration // the latest request of the session the leader answered
}

// newServer makes the servers, with the lock paths and a data node.
func newServer() server {
	t := memzk.New()
	for _, p := range []string{"/l", "/l/k0", "/l/k1", "/l/k2", "/data"} {
		if _, err := t.Create(0, p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			panic(err)
		}
	}
	return server{tree: t, next: 0x100, sess: map[int64]*lsess{}, touched: map[int64]time.Duration{}}
}

// expiredBy reports whether the leader expired session id at or before t.
func (w *world) expiredBy(id int64, t time.Duration) bool {
	ls := w.srv.sess[id]
	return ls != nil && ls.expiredAt >= 0 && ls.expiredAt <= t
}

// expiry is when the leader expired session id (-1: never).
func (w *world) expiry(id int64) time.Duration {
	if ls := w.srv.sess[id]; ls != nil {
		return ls.expiredAt
	}
	return -1
}

// newSession opens a session at the leader with timeout to, heard of
// now.
func (w *world) newSession(to time.Duration) int64 {
	w.srv.next++
	id := w.srv.next
	w.srv.sess[id] = &lsess{heard: -1, expiredAt: -1, proved: -1}
	w.heard(id, to)
	return id
}

// heard is the leader touching session id now with timeout to: its
// expiry moves to now + to, rounded up (later or earlier than it was).
func (w *world) heard(id int64, to time.Duration) {
	ls := w.srv.sess[id]
	if ls == nil || ls.expiredAt >= 0 {
		return
	}
	ls.heard, ls.expires = w.now(), w.roundUp(w.now()+to)
	w.ag.at(ls.expires, func() { w.checkExpiry(id) })
}

// roundUp is ExpiryQueue.roundToNextInterval: the first of the leader's
// tick boundaries after t (strictly: one on t goes a tick on).
func (w *world) roundUp(t time.Duration) time.Duration {
	tick, ph := w.cfg.tick, w.cfg.expiryPhase
	return ((t-ph)/tick+1)*tick + ph
}

// checkExpiry expires session id if its expiry has come: nothing touched
// it since with a later one.
func (w *world) checkExpiry(id int64) {
	ls := w.srv.sess[id]
	if ls.expiredAt >= 0 || w.now() < ls.expires {
		return
	}
	ls.expiredAt = w.now()
	w.srv.tree.CloseSession(id)
	w.logf("leader expires session %#x", id)
	w.cover(coverExpiredConnected, w.c.cur != nil && w.c.cur.sid == id)
	w.cover(coverExpiredAfterProof, w.lastProofOf(id) > ls.heard)
	// The follower closes the session's connection once it takes the
	// close's commit: no reply after that.
	w.sendDown(func() {
		c := w.c.cur
		if c == nil || c.sid != id {
			return
		}
		c.replies = append(c.replies, &reply{}) // never ready
		c.back = max(w.now()+w.back(), c.back)  // behind what it sent before: a connect answer too
		w.ag.at(c.back, func() {
			if c == w.c.cur {
				w.drop("the server closed the expired session's connection", nil, nil)
			}
		})
	})
}

// lastProofOf is when the leader last processed a request of session id
// that it answered (-1: none).
func (w *world) lastProofOf(id int64) time.Duration {
	if ls := w.srv.sess[id]; ls != nil {
		return ls.proved
	}
	return -1
}

// sendUp puts fn, the follower's message, on the stream up: it reaches
// the leader after a hop, behind what went before, once the stream is not
// cut.
func (w *world) sendUp(fn func()) { w.send(&w.srv.up, &w.srv.lastOut, fn) }

// sendDown puts fn, the leader's message, on the stream down.
func (w *world) sendDown(fn func()) { w.send(&w.srv.down, &w.srv.lastIn, fn) }

func (w *world) send(s *stream, last *time.Duration, fn func()) {
	if s.cut(w.now()) || len(s.waiting) > 0 {
		s.waiting = append(s.waiting, fn)
		return
	}
	*last = max(w.now()+w.linkHop(), *last)
	w.ag.at(*last, fn)
}

// linkHop is the way between the servers.
func (w *world) linkHop() time.Duration {
	if w.cfg.healthy || w.rng.IntN(4) > 0 {
		return uniform(w.rng, w.cfg.tick/64)
	}
	return uniform(w.rng, w.cfg.tick/4)
}

// leaderPing is the leader's loop: a ping down to the follower, then the
// next after half a tick and up to an eighth of a tick more.
func (w *world) leaderPing() {
	if w.isClosed() {
		return
	}
	next := w.now() + w.cfg.tick/2 + uniform(w.rng, w.cfg.tick/8)
	if w.cfg.slowPings {
		next += uniform(w.rng, w.cfg.tick) // the argument's assumption dropped
	}
	w.ag.at(next, w.leaderPing)
	if w.srv.orphan {
		return
	}
	w.srv.pings++
	w.sendDown(w.pingReply)
}

// pingReply is the follower taking a ping: it answers at once with its
// touch table, which the leader takes as heard when the answer arrives,
// each session with the timeout its entry carries.
func (w *world) pingReply() {
	if len(w.srv.touched) == 0 {
		return
	}
	ids := make([]int64, 0, len(w.srv.touched))
	for id := range w.srv.touched {
		ids = append(ids, id)
	}
	table := maps.Clone(w.srv.touched)
	clear(w.srv.touched)
	w.sendUp(func() {
		for _, id := range sortedIDs(ids) {
			w.heard(id, table[id])
		}
	})
}

// touched is a packet of session id reaching the follower now on a
// connection granted timeout to (LearnerSessionTracker.touchSession: the
// latest touch's timeout stands).
func (w *world) touched(id int64, to time.Duration) { w.srv.touched[id] = to }

// admit is the leader taking c's connect request from the follower: a
// new session's creation, or the REVALIDATE of the session it names,
// each touching the session with the timeout the follower granted c; 0
// when the session named has expired (the answer then carries none).
func (w *world) admit(c *cconn) int64 {
	switch {
	case c.asked == 0:
		return w.newSession(c.T)
	case w.expiredBy(c.asked, w.now()):
		return 0
	}
	w.heard(c.asked, c.T)
	return c.asked
}

// forward sends r, which reached the follower on c, to the leader; its
// answer comes back down into its place among c's replies.
func (w *world) forward(c *cconn, r *req, slot *reply) {
	w.cover(coverHeldAtLink, w.srv.up.cut(w.now()) && r.op == wire.OpSync)
	w.sendUp(func() {
		w.srv.lastPrc = max(w.now()+w.proc(), w.srv.lastPrc) // a session's requests in order
		w.ag.at(w.srv.lastPrc, func() { w.process(c, r, slot) })
	})
}

// process is the leader's: r is applied, and its answer goes back down;
// once its session expired, it is refused, and the follower, which takes
// the close's commit first, closes the connection instead of answering
// (lease_conformance_scene_test.go sees the client's request fail with the
// connection).
func (w *world) process(c *cconn, r *req, slot *reply) {
	if w.expiredBy(c.sid, w.now()) {
		w.cover(coverRefusedExpired, true)
		return
	}
	if ls := w.srv.sess[c.sid]; ls != nil {
		w.cover(coverProvedUnheard, w.now()-ls.heard > w.cfg.T*3/4)
		ls.proved = w.now()
	}
	slot.res, slot.err = w.apply(c.sid, r)
	w.sendDown(func() {
		slot.ready = true
		w.flush(c)
	})
}

// apply applies r to the data tree in session sid.
func (w *world) apply(sid int64, r *req) ([]zk.MultiResponse, error) {
	t := w.srv.tree
	switch r.op {
	case wire.OpSync:
		return nil, nil
	case wire.OpCreate:
		c := r.ops[0].(*zk.CreateRequest)
		name, err := t.Create(sid, c.Path, c.Data, c.Flags, c.Acl)
		return []zk.MultiResponse{{String: name, Error: err}}, err
	case wire.OpDelete:
		d := r.ops[0].(*zk.DeleteRequest)
		err := t.Delete(sid, d.Path, d.Version)
		return []zk.MultiResponse{{Error: err}}, err
	}
	return t.Multi(sid, r.ops...)
}

// partition cuts the stream down (down), the one up (up), or both, for d;
// past syncLimit × tickTime the follower drops its clients.
func (w *world) partition(d time.Duration, down, up bool) {
	now := w.now()
	w.cover(coverOneWay, down != up)
	for _, x := range []struct {
		on bool
		s  *stream
	}{{down, &w.srv.down}, {up, &w.srv.up}} {
		if x.on {
			x.s.cutTill = max(x.s.cutTill, now+d)
			w.ag.at(now+d, func() { w.heal(x.s) })
		}
	}
	if d > w.cfg.orphanAfter {
		w.ag.at(now+w.cfg.orphanAfter, func() {
			if !w.linkCut() || w.srv.orphan {
				return
			}
			w.srv.orphan = true
			w.cover(coverOrphaned, true)
			w.drop("the follower lost the leader (syncLimit)", nil, nil)
		})
	}
}

// linkCut reports whether either stream is cut now.
func (w *world) linkCut() bool { return w.srv.down.cut(w.now()) || w.srv.up.cut(w.now()) }

// heal ends a stream's cut once its last window is over: what waited
// goes, in order.
func (w *world) heal(s *stream) {
	if s.cut(w.now()) {
		return // a later window holds it still
	}
	w.logf("a stream heals")
	waiting := s.waiting
	s.waiting = nil
	last := &w.srv.lastIn
	if s == &w.srv.up {
		last = &w.srv.lastOut
	}
	for _, fn := range waiting {
		*last = max(w.now()+w.linkHop(), *last)
		w.ag.at(*last, fn)
	}
	if !w.linkCut() {
		w.srv.orphan = false
	}
}

// sortedIDs is ids in order: the touch table is a map.
func sortedIDs(ids []int64) []int64 {
	slices.Sort(ids)
	return ids
}
