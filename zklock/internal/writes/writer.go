package writes

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/mutant"
)

// The writer: a goroutine that takes a round from the head of the queue,
// seals it, sends it, settles each write by its answer, and takes the
// next, while there is something to send.

// run is the writer. It waits while the session has no connection
// (Conn.Connected), and stops once the queue is empty or holds only lone
// deletes that linger (the timer starts it again) or the session closed.
// With nothing to send yet it clears running and arms the timer for
// lingering deletes; when their FoldWait ran out since takeLocked looked,
// startLocked sets running again and the writer goes on (returning then
// would leave the session with no writer for good: model/writes.pml,
// MUTANT_NO_REARM).
func (q *Queue) run() {
	for q.c.Connected() {
		q.mu.Lock()
		round := q.takeLocked()
		for round == nil && !q.closed {
			q.running = false
			if !q.startLocked(false) {
				q.mu.Unlock()
				return
			}
			round = q.takeLocked()
		}
		q.mu.Unlock()
		if round == nil {
			break // closed: shut it
		}
		reqs, sentIn := q.seal(round)
		if len(reqs) == 0 {
			continue
		}
		start := q.c.Now()
		answers := q.c.Send(reqs)
		rtt, answeredIn := q.c.Now().Sub(start), q.c.SessionID()
		var again []*Write
		for i, r := range reqs {
			again = q.settle(r, answers[i], sentIn, answeredIn, rtt, again)
		}
		if len(again) > 0 {
			q.requeue(again)
		}
	}
	q.shut()
}

// seal makes a round's requests: a write given up since it was taken is
// left out (its caller was told it was withdrawn), and so is the delete of a node whose session is over (the
// server deleted it with its session). From here a caller who gives up is
// told the outcome is unknown (GiveUp). sid is the session it goes in.
func (q *Queue) seal(round [][]*Write) (reqs []*Request, sid int64) {
	sid = q.c.SessionID()
	var moot []*Write
	q.mu.Lock()
	for _, batch := range round {
		r := &Request{}
		for _, w := range batch {
			switch {
			case w.stage == ended:
				continue
			case w.kind == Delete && w.owner != 0 && w.owner != sid:
				moot = append(moot, w)
				continue
			}
			w.stage = sealed
			w.resealed()
			r.Writes = append(r.Writes, w)
			r.Ops = append(r.Ops, w.ops...)
		}
		if len(r.Writes) > 0 {
			r.Single = len(r.Writes) == 1 && r.Writes[0].kind != Txn
			reqs = append(reqs, r)
		}
	}
	q.mu.Unlock()
	for _, w := range moot {
		w.tell(q.c.GoneWithSession) // outside q.mu: told may call the queue
	}
	return reqs, sid
}

// settle settles the writes of r by its answer a (sentIn: the session the
// round was sealed in; answeredIn: the one after the answer): applied,
// refused at one write's op (that write fails alone; the others were not
// applied and go again, together, at the head of the queue), or unknown
// (no result per op). It returns again with what must go again appended,
// in order.
func (q *Queue) settle(r *Request, a Answer, sentIn, answeredIn int64, rtt time.Duration, again []*Write) []*Write {
	failing := -1
	if len(a.Results) == len(r.Ops) && a.Err != nil {
		for i, res := range a.Results {
			if res.Error != nil {
				failing = i // ZooKeeper reports the ops before it OK, those after it "not run"
				break
			}
		}
	}
	switch {
	case len(a.Results) != len(r.Ops) || a.Err != nil && failing < 0:
		return q.unknown(r, a, rtt, again)
	case a.Err == nil && answeredIn != sentIn:
		answeredIn = 0 // answered as the session changed: whose are the nodes?
	}
	off := 0
	for _, w := range r.Writes {
		res := a.Results[off : off+len(w.ops)]
		switch {
		case failing < 0:
			again = q.end(w, Result{Verdict: Applied, Results: res, Session: answeredIn}, rtt, again)
		case failing >= off && failing < off+len(w.ops):
			again = q.end(w, Result{Verdict: Refused, Results: res, Op: failing - off, Err: a.Results[failing].Error, Session: answeredIn}, rtt, again)
		default:
			if mutant.On(mutDeleteToldNeighbour) {
				w.tell(a.Err) // seeded bug: a delete told its batch's refusal, another write's
			}
			w.refusals++ // refused for another write's op: nothing of it applied
			again = append(again, w)
		}
		off += len(w.ops)
	}
	return again
}

// unknown settles the writes of r, whose answer a has no result per op
// (or an error with no failing op, not an answer ZooKeeper gives): the
// outcome of each is unknown.
func (q *Queue) unknown(r *Request, a Answer, rtt time.Duration, again []*Write) []*Write {
	err := a.Err
	if err == nil {
		err = fmt.Errorf("%w: %d results for %d ops", ErrOutcomeUnknown, len(a.Results), len(r.Ops))
	}
	for _, w := range r.Writes {
		again = q.end(w, Result{Verdict: Unknown, Err: err}, rtt, again)
	}
	return again
}

// end settles w with r. It returns again with what must go again at the
// head of the queue appended: a delete whose outcome is unknown (sent
// again once connected, until its node or its session is gone), and the
// delete of what an abandoned create made.
func (q *Queue) end(w *Write, r Result, rtt time.Duration, again []*Write) []*Write {
	if w.bounded() {
		q.c.Ended(true, rtt)
	}
	if w.kind == Delete {
		w.tell(q.deleteTold(w, r))
		switch {
		case r.Verdict == Applied || r.Verdict == Refused && errors.Is(r.Err, zk.ErrNoNode):
		case r.Verdict == Refused: // an ACL, say: retried alone, backing off
			q.c.DeleteApart(OpPath(w.ops[0]), w.owner)
		default:
			again = append(again, w)
		}
		return again
	}
	q.mu.Lock()
	w.res, w.stage = r, ended
	abandoned, sweep := w.abandoned, w.sweep
	q.mu.Unlock()
	w.finish()
	if abandoned {
		// At the head of the queue, so that no later create of the
		// session on its path goes first.
		if d := q.leftOver(w, sweep); d != nil {
			again = append(again, d)
		}
	}
	return again
}

// deleteTold is what a delete's first outcome r tells its handler: the
// error of its own op, or of its request, but a refusal for the node's
// absence once its node's session is over (the answer came in another
// session: a request sealed in the old one and sent in the new), which is
// Conn.GoneWithSession, as when it is dropped unsent.
func (q *Queue) deleteTold(w *Write, r Result) error {
	if r.Verdict == Refused && errors.Is(r.Err, zk.ErrNoNode) && w.owner != 0 && r.Session != w.owner && !mutant.On(mutGoneToldNoNode) {
		return q.c.GoneWithSession
	}
	return r.Err
}

// requeue puts writes back at the head of the queue, in their order,
// ahead of everything queued since. A write refused for another's op
// whose caller gave up is not sent again: nothing of it was applied, and
// it ends Withdrawn.
func (q *Queue) requeue(ws []*Write) {
	if len(ws) == 0 {
		return
	}
	q.mu.Lock()
	kept := ws[:0:0]
	var dropped []*Write
	for _, w := range ws {
		if w.abandoned {
			w.res, w.stage = Result{Verdict: Withdrawn, Err: ErrWithdrawn}, ended
			dropped = append(dropped, w)
			continue
		}
		w.stage = queued
		if w.kind == Delete {
			q.deletes[w.path]++
		}
		kept = append(kept, w)
	}
	q.queue = append(kept, q.queue...)
	q.mu.Unlock()
	for _, w := range dropped {
		if w.bounded() {
			q.c.Ended(false, 0)
		}
		w.finish()
	}
}

// Written tells r's writes that r is on the wire: a request the caller
// sends after this goes out after r.
func (r *Request) Written() {
	for _, w := range r.Writes {
		w.onWire()
	}
}

// Handing tells r's writes that r is being handed to a connection whose
// wire the session cannot see (Handed): called right before the call that
// sends it, on the goroutine that makes it.
func (r *Request) Handing() {
	for _, w := range r.Writes {
		if w.wire.Load() != nil {
			w.handed.close()
		}
	}
}

// wireMark is closed once a request is on the wire, or its write is
// over. A write's first request's is its Sent. A write sealed again,
// after a batch it was on the wire in was refused at another write's op,
// gets one of its own (resealed): what a caller who then gives it up waits
// for before it is told the outcome is unknown, so that what it sends next
// goes after that request, not after the refused one.
type wireMark struct {
	ch     chan struct{}
	closed atomic.Bool
}

func (m *wireMark) close() {
	if m.closed.CompareAndSwap(false, true) {
		close(m.ch)
	}
}

// resealed gives w a mark of its own for the request it is being sealed
// into, when its last one was on the wire already. q.mu is held.
func (w *Write) resealed() {
	if m := w.wire.Load(); m != nil && m.closed.Load() {
		w.wire.Store(&wireMark{ch: make(chan struct{})})
	}
}

// onWire closes the mark of the request w is sealed into, and Sent, once
// each (a delete has neither).
func (w *Write) onWire() {
	if m := w.wire.Load(); m != nil {
		m.close()
		w.handed.close()
		w.sent.close()
	}
}
