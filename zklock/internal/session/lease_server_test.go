package session

import (
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/wire"
	"github.com/tierlock/tierlock/zklock/internal/writes/memzk"
)

// The double's servers: the follower the client is connected to and the
// ensemble's leader, and the link between them (the faults are in
// lease_explore_test.go's table).
//
//   - Every request and ping reaching the follower touches its session
//     there. The follower reports touches to the leader at its ping
//     replies, every tickTime/2 while the link is up, and ahead of any
//     request it forwards (lease.go's assumption: the replies share the
//     link, in order); while the link is down nothing is reported.
//   - A sync or a write is forwarded to the leader over the link (it waits
//     while the link is down) and processed there, in order: applied to the
//     data tree (memzk, kept honest by its own conformance test), its answer
//     coming back over the link; or, once the leader expired the session,
//     refused, the follower having closed the connection by then.
//   - The follower answers a session's requests and pings in the order
//     they came (ZooKeeper's CommitProcessor queues a session's requests
//     behind its sync or write in flight): a ping's reply waits behind a
//     sync the link holds.
//   - The leader expires a session at E = lastHeard + T, lastHeard the
//     latest touch reported to it (the real server rounds E up to its next
//     tick, which only delays it: the double's E is the earliest), and the
//     follower then closes the session's connection (once the link lets it
//     learn of it).
//   - A follower cut from the leader for longer than syncLimit × tickTime
//     (drawn per schedule, up to 2T) drops its clients and takes none
//     until the link heals; before that it keeps answering pings.
type server struct {
	tree *memzk.Tree
	next int64
	sess map[int64]*lsess

	touch     time.Duration // the latest touch not yet reported (-1: none)
	touchSid  int64
	reporting bool          // a ping reply is due
	down      bool          // the link to the leader is cut
	healAt    time.Duration // when it heals
	fifo      []func()      // what waits for the link, in order (both ways)
	orphaned  bool          // the follower gave up on the leader (syncLimit)
	lastProc  time.Duration // when the leader processes the latest forwarded request
}

// lsess is a session as the leader has it.
type lsess struct {
	heard     time.Duration // lastHeard
	expiredAt time.Duration // -1: alive
}

// newServer makes the servers, with the lock paths and a data node.
func newServer() server {
	t := memzk.New()
	for _, p := range []string{"/l", "/l/k0", "/l/k1", "/l/k2", "/data"} {
		if _, err := t.Create(0, p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			panic(err)
		}
	}
	return server{tree: t, next: 0x100, sess: map[int64]*lsess{}, touch: -1}
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

// newSession opens a session at the leader, heard of now.
func (w *world) newSession() int64 {
	w.srv.next++
	id := w.srv.next
	w.srv.sess[id] = &lsess{heard: -1, expiredAt: -1}
	w.heard(id, w.now())
	return id
}

// heard is a touch of session id at time u reaching the leader.
func (w *world) heard(id int64, u time.Duration) {
	ls := w.srv.sess[id]
	if ls == nil || ls.expiredAt >= 0 || u <= ls.heard {
		return
	}
	ls.heard = u
	w.ag.at(u+w.cfg.T, func() { w.checkExpiry(id) })
}

// checkExpiry expires session id if nothing was heard of it for T.
func (w *world) checkExpiry(id int64) {
	ls := w.srv.sess[id]
	if ls.expiredAt >= 0 || w.now() < ls.heard+w.cfg.T {
		return
	}
	ls.expiredAt = w.now()
	w.srv.tree.CloseSession(id)
	w.logf("leader expires session %#x", id)
	w.cover(coverExpiredConnected, w.c.cur != nil && w.c.cur.sid == id)
	// The follower closes the session's connection once it learns of the
	// expiry's commit, over the link: no reply after that.
	w.link(func() {
		c := w.c.cur
		if c == nil || c.sid != id {
			return
		}
		c.replies = append(c.replies, &reply{}) // never ready
		w.ag.at(w.now()+w.back(), func() {
			if c == w.c.cur {
				w.drop("the server closed the expired session's connection", nil, nil)
			}
		})
	})
}

// link sends fn's message from the follower to the leader: now, or once
// the link heals, in order.
func (w *world) link(fn func()) {
	if w.srv.down {
		w.srv.fifo = append(w.srv.fifo, fn)
		return
	}
	fn()
}

// touched is a write of session id reaching the follower now.
func (w *world) touched(id int64) {
	w.srv.touch, w.srv.touchSid = w.now(), id
	w.scheduleReport()
}

// scheduleReport arms the follower's next ping reply, at its next
// tickTime/2 boundary, while a touch waits to be reported.
func (w *world) scheduleReport() {
	if w.srv.reporting || w.srv.touch < 0 {
		return
	}
	half := w.cfg.tick / 2
	at := w.cfg.phase + (max(w.now()-w.cfg.phase, 0)+half-1)/half*half
	w.srv.reporting = true
	w.ag.at(at, func() {
		w.srv.reporting = false
		if !w.srv.down {
			w.report()
		}
	})
}

// report tells the leader of the follower's latest touch.
func (w *world) report() {
	if w.srv.touch < 0 {
		return
	}
	w.heard(w.srv.touchSid, w.srv.touch)
	w.srv.touch = -1
}

// forward sends r, which reached the follower on c, to the leader: behind
// the touches the follower has not reported yet. Its answer comes back
// over the link into its place among c's replies.
func (w *world) forward(c *cconn, r *req, slot *reply) {
	w.cover(coverHeldAtLink, w.srv.down && r.op == wire.OpSync)
	w.link(func() {
		if !w.cfg.pingReplies {
			w.report()
		}
		w.srv.lastProc = max(w.now()+w.proc(), w.srv.lastProc) // a session's requests in order
		w.ag.at(w.srv.lastProc, func() { w.process(c, r, slot) })
	})
}

// process is the leader's: r is applied, and its answer goes back to the
// follower; once its session expired, it is refused, and the follower,
// which learns of the expiry first (the commit comes ahead of the answer),
// closes the connection instead of answering (lease_conformance_test.go
// sees the client's request fail with the connection).
func (w *world) process(c *cconn, r *req, slot *reply) {
	if w.expiredBy(c.sid, w.now()) {
		w.cover(coverRefusedExpired, true)
		return
	}
	slot.res, slot.err = w.apply(c.sid, r)
	w.link(func() {
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

// partition cuts the link for d; past syncLimit × tickTime the follower
// drops its clients.
func (w *world) partition(d time.Duration) {
	w.srv.down = true
	w.srv.healAt = max(w.srv.healAt, w.now()+d)
	w.ag.at(w.now()+d, w.heal)
	if d > w.cfg.orphanAfter {
		w.ag.at(w.now()+w.cfg.orphanAfter, func() {
			if !w.srv.down || w.srv.orphaned {
				return
			}
			w.srv.orphaned = true
			w.cover(coverOrphaned, true)
			w.drop("the follower lost the leader (syncLimit)", nil, nil)
		})
	}
}

// heal ends the partition once its last window is over: what waited goes
// in order, and the touches are reported at the next ping reply.
func (w *world) heal() {
	if !w.srv.down || w.now() < w.srv.healAt {
		return
	}
	w.logf("link heals")
	w.srv.down, w.srv.orphaned = false, false
	fifo := w.srv.fifo
	w.srv.fifo = nil
	for _, fn := range fifo {
		fn()
	}
	// The leader's pings, held by the partition, reach the follower behind
	// what waited: it answers them with its touches.
	w.report()
	w.scheduleReport()
}
