package writes_test

import (
	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/writes"
)

// The world's faults: the connection lost (and what the server did with
// the requests out), back in the same session or a new one, and the
// Session's close.

// drop loses the connection: each written request not yet applied is
// applied now or never (apply[i], in wire order), and every written
// request is answered without results; what was not written stays
// queued for the next connection, as go-zookeeper keeps it.
func (w *world) drop(apply []bool) {
	k := 0
	for _, r := range w.wire {
		if !r.applied {
			if k < len(apply) && apply[k] {
				w.cover(coverDropApplied)
				w.applyReq(r)
			} else {
				w.cover(coverDropLost)
			}
			k++
		}
	}
	lost := w.wire
	w.wire = nil
	w.state = connDown
	var held []string
	for _, slot := range w.unwritten {
		for _, r := range slot {
			held = append(held, r.what)
		}
	}
	w.logf("connection lost (%d requests out; unwritten: %v)", len(lost), held)
	for _, r := range lost {
		w.deliver(r, writes.Answer{Err: zk.ErrConnectionClosed})
	}
}

// reconnect brings the connection back, in a new session when expire:
// the server expired the old one, and its ephemeral nodes with it.
func (w *world) reconnect(expire bool) {
	if expire || w.noSession {
		w.cover(coverNewSession)
		w.tree.CloseSession(w.sid)
		w.nextID++
		w.sid, w.noSession = w.nextID, false
	}
	w.state = connUp
	w.logf("connected, session %d", w.sid)
}

// learnExpiry is the client learning, the connection down, that the
// server expired its session: SessionID says 0 until a new session.
func (w *world) learnExpiry() {
	w.tree.CloseSession(w.sid)
	w.noSession = true
	w.logf("session %d expired (SessionID 0)", w.sid)
}

// closeSession is the Session's Close: the queue stops and Connected
// says false. A connection of the Session's own closes: requests not
// written fail unsent, those out are applied or not (apply) and fail, and
// the server ends the session. A connection of its owner's
// (KeepDeletesOnClose) stays, and so does the session.
func (w *world) closeSession(apply []bool) {
	w.closed = true // first: what Stop tells, it tells of a closed session
	w.q.Stop()
	if w.cfg.KeepDeletesOnClose {
		w.logf("session closed (the connection is its owner's)")
		return
	}
	if w.state == connUp {
		w.drop(apply)
	}
	for _, slot := range w.unwritten {
		for _, r := range slot {
			w.deliver(r, writes.Answer{Err: zk.ErrConnectionClosed})
		}
	}
	w.unwritten = nil
	w.state = connGone
	w.tree.CloseSession(w.sid)
	w.logf("session closed")
}
