package zklock

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/trace"
)

// What an answer means for each write of the batch it answers (writes.go
// has the queue, writer.go the send): applied, refused at one write's op
// (that write fails alone, the others go again, apart), or unknown; and
// what a write whose caller gave up leaves to clean.

// settle tells each write of batch what the answer means for it.
func (q *writeQueue) settle(batch []*write, res []zk.MultiResponse, err error, sentIn, answeredIn int64, rtt time.Duration) {
	nops := 0
	for _, w := range batch {
		nops += len(w.ops)
	}
	var again []*write
	switch {
	case len(res) != nops:
		// No answer per op: the outcome of each is unknown.
		if err == nil {
			err = fmt.Errorf("%w: %d results for %d ops", ErrOutcomeUnknown, len(res), nops)
		}
		for _, w := range batch {
			again = q.end(w, nil, err, 0, rtt, again)
		}
	case err == nil:
		sid := answeredIn
		if sid != sentIn {
			sid = 0 // answered as the session changed: whose are the nodes?
		}
		off := 0
		for _, w := range batch {
			again = q.end(w, res[off:off+len(w.ops)], nil, sid, rtt, again)
			off += len(w.ops)
		}
	default:
		again = q.failOne(batch, res, err, answeredIn, rtt)
	}
	q.requeue(again, err != nil && len(res) == nops)
}

// failOne settles a batch the server refused: the write of the first
// failing op fails alone; the others were not applied, and go again (the
// writes it returns).
func (q *writeQueue) failOne(batch []*write, res []zk.MultiResponse, err error, sid int64, rtt time.Duration) []*write {
	i := 0
	for i < len(res) && res[i].Error == nil {
		i++
	}
	if i == len(res) { // an error with no failing op: not an answer we know
		var again []*write
		for _, w := range batch {
			again = q.end(w, nil, err, 0, rtt, again)
		}
		return again
	}
	off := 0
	var again []*write
	for _, w := range batch {
		if i >= off && i < off+len(w.ops) {
			again = q.end(w, res[off:off+len(w.ops)], res[i].Error, sid, rtt, again)
		} else {
			again = append(again, w)
		}
		off += len(w.ops)
	}
	return again
}

// end settles w: res are its ops' results (nil when unknown), err its
// error, sid the session that answered it (0: unknown, or changed since
// it was sent). It returns again with what must go again at the head of
// the queue appended: a delete whose outcome is unknown (sent again when
// the session is connected, in the queue's order, until its node or its
// session is gone), and the delete of what an abandoned create made.
func (q *writeQueue) end(w *write, res []zk.MultiResponse, err error, sid int64, rtt time.Duration, again []*write) []*write {
	s := q.s
	if w.admitted {
		s.flight.release(rtt, s.st.lease.bound()/8)
	}
	if w.kind == writeDelete {
		w.told(err)
		switch {
		case err == nil || errors.Is(err, zk.ErrNoNode):
		case refusal(err):
			// Refused (an ACL): retried alone, backing off, until allowed
			// or its session is over.
			s.deleteInBackground(opPath(w.ops[0]), w.owner)
		default:
			again = append(again, w)
		}
		return again
	}
	w.res, w.err, w.sid = res, err, sid
	if err == nil && sid == 0 && w.kind == writeCreate {
		w.err = errSessionChanged
	}
	q.mu.Lock()
	w.ended = true
	abandoned := w.abandoned
	q.mu.Unlock()
	w.finish()
	if abandoned {
		again = q.orphaned(w, again)
	}
	return again
}

// orphaned cleans up after a create whose caller gave up once it was sent
// (abandon): what it made is deleted, at the head of the queue, so that
// no later create of the session on its path goes first; a create whose
// outcome is unknown is looked for by its GUID.
func (q *writeQueue) orphaned(w *write, again []*write) []*write {
	switch {
	case w.kind != writeCreate || refusal(w.err) || errors.Is(w.err, errWithdrawn):
	case w.err == nil:
		trace.DelAdded(q.s.conn, w.path, w.node(), w.sid)
		again = append(again, newDelete(w.path, w.node(), w.sid))
	default:
		w.sweep()
	}
	return again
}

// dropMoot takes out of batch the deletes of nodes made in a session other
// than sid: the server deleted them when that session ended.
func dropMoot(batch []*write, sid int64) []*write {
	out := batch[:0]
	for _, w := range batch {
		if w.kind == writeDelete && w.owner != 0 && w.owner != sid {
			w.told(errGoneWithSession)
			continue
		}
		out = append(out, w)
	}
	return out
}

// errGoneWithSession is what a delete dropped by dropMoot tells its then:
// the node went with its session.
var errGoneWithSession = fmt.Errorf("zklock: the node's session is over: %w: %w", ErrSessionExpired, zk.ErrNoNode)

// requeue puts writes of a failed batch back at the head of the queue, in
// their order, ahead of everything queued since.
// A write whose caller gave up (abandoned) is not sent again: nothing of
// it was applied, and it is over (errWithdrawn). alone: the writes of a
// refused batch, sent again each alone (takeApartLocked).
func (q *writeQueue) requeue(ws []*write, alone bool) {
	if len(ws) == 0 {
		return
	}
	q.mu.Lock()
	kept := ws[:0:0]
	var dropped []*write
	for _, w := range ws {
		if w.abandoned {
			w.ended = true
			dropped = append(dropped, w)
			continue
		}
		w.taken, w.alone = false, alone
		if w.kind == writeDelete {
			q.deletes[w.path]++
		}
		kept = append(kept, w)
	}
	q.queue = append(kept, q.queue...)
	q.mu.Unlock()
	for _, w := range dropped {
		if w.admitted {
			q.s.flight.giveBack()
		}
		w.err = errWithdrawn
		w.finish()
	}
}

// errWithdrawn ends a write whose caller gave up before it was applied.
var errWithdrawn = errors.New("zklock: write withdrawn before it was applied")

// abandon marks w, whose caller gave up after a batch took it, so that the
// writer cleans up after it as it settles it (orphaned), and reports true;
// false when the writer settled it already: the caller then has its
// outcome (done is closed) and cleans up itself. A write back in the queue
// (its batch was refused for another's op) is taken out: nothing of it was
// applied. sweep looks for a create of unknown outcome by its GUID.
func (q *writeQueue) abandon(w *write, sweep func()) bool {
	q.mu.Lock()
	if w.ended {
		q.mu.Unlock()
		return false
	}
	w.abandoned, w.sweep = true, sweep
	if w.taken || !q.removeLocked(w) {
		q.mu.Unlock()
		return true
	}
	w.ended = true
	q.mu.Unlock()
	if w.admitted {
		q.s.flight.giveBack()
	}
	w.err = errWithdrawn
	w.finish()
	return true
}
