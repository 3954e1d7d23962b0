package zklock

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/zklock/internal/wire"
)

// The session's writer (writes.go has its queue): a goroutine that sends a
// batch, settles each of its writes by the answer, and sends the next,
// while there is something to send.

// run is the writer: it sends a batch, waits for its answer, and sends the
// next, until the queue is empty (or holds only lone deletes that linger).
// While the session has no connection it waits: a request queued then
// would go out on the next connection, possibly in a new session.
func (q *writeQueue) run() {
	for {
		if gate := testWriterGate.Load(); gate != nil {
			select {
			case <-*gate:
			case <-q.s.life.ctx.Done():
			}
		}
		if !q.s.awaitConnected() {
			q.shut()
			return
		}
		q.mu.Lock()
		batch, apart := q.takeLocked()
		if batch == nil {
			q.running = false
			// Arms the timer for lingering deletes, or, when their foldWait
			// ran out since takeLocked looked, says that the queue must be
			// sent now: running is set again, and this goroutine goes on
			// (returning would leave the session with no writer for good:
			// model/writes.pml, MUTANT_NO_REARM).
			again := q.startLocked(false)
			q.mu.Unlock()
			if again {
				continue
			}
			return
		}
		q.mu.Unlock()
		if apart {
			q.sendApart(batch)
			continue
		}
		q.send(batch)
	}
}

// sendApart sends each write of ws alone, all at once, and returns once
// every answer is in (takeApartLocked says why).
func (q *writeQueue) sendApart(ws []*write) {
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q.send([]*write{w})
		}()
	}
	wg.Wait()
}

// The send of one batch: the request, and what its answer means for each
// write.

// send writes batch as one request and settles each write by the answer.
// Deletes of nodes whose session is over are dropped: the server deleted
// them with it.
func (q *writeQueue) send(batch []*write) {
	s := q.s
	sid := s.conn.SessionID()
	batch = dropMoot(batch, sid)
	if len(batch) == 0 {
		return
	}
	s.lead() // after a quiet spell, the lease's sync goes first (lease.go)
	ops := make([]any, 0, len(batch))
	for _, w := range batch {
		ops = append(ops, w.ops...)
	}
	single := len(batch) == 1 && batch[0].kind != writeTxn
	if s.tap != nil && !s.cfg.noPipelining {
		key := opPath(ops[0])
		wt := s.tap.ExpectFunc(key, func() {
			for _, w := range batch {
				w.onWire()
			}
		}, requestOpcode(single, ops[0]))
		defer s.tap.Forget(key, wt)
	}
	p := s.newProof()
	if s.tap != nil {
		s.tap.Handed()
	}
	start := time.Now()
	if trace.Enabled { // guarded: the closure would stay in a build without the tag
		trace.WritesSent(s.conn, len(batch), func(i int) (bool, []any) { return batch[i].kind == writeTxn, batch[i].ops })
	}
	res, err := q.do(single, ops)
	if trace.Enabled {
		trace.WritesAnswered(s.conn, len(batch), func(i int) (bool, []any) { return batch[i].kind == writeTxn, batch[i].ops }, res, err)
	}
	if s.tap != nil {
		s.tap.Answered()
	}
	answeredIn := s.conn.SessionID()
	if err == nil {
		s.proved(p)
	}
	q.settle(batch, res, err, sid, answeredIn, time.Since(start))
}

// do makes the request: a plain create or delete when it is alone (its
// answer carries what a multi's would, for less), else a multi. The
// results are one per op whenever the server evaluated the request.
func (q *writeQueue) do(single bool, ops []any) ([]zk.MultiResponse, error) {
	conn := q.s.conn
	if !single {
		return conn.Multi(ops...)
	}
	switch o := ops[0].(type) {
	case *zk.CreateRequest:
		node, err := conn.Create(o.Path, o.Data, o.Flags, o.Acl)
		return answerOf(err, zk.MultiResponse{String: node, Error: err})
	case *zk.DeleteRequest:
		err := conn.Delete(o.Path, o.Version)
		return answerOf(err, zk.MultiResponse{Error: err})
	}
	return conn.Multi(ops...)
}

// answerOf is a single request's result as a multi's: one result when the
// server answered (nil, or one of its refusals), none when it may not have.
func answerOf(err error, r zk.MultiResponse) ([]zk.MultiResponse, error) {
	if err != nil && !refusal(err) {
		return nil, err
	}
	return []zk.MultiResponse{r}, err
}

// requestOpcode is the opcode the batch is written with, by which the tap
// knows it.
func requestOpcode(single bool, op any) int32 {
	if !single {
		return wire.OpMulti
	}
	if _, ok := op.(*zk.DeleteRequest); ok {
		return wire.OpDelete
	}
	return wire.OpCreate
}

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
			continue
		}
		out = append(out, w)
	}
	return out
}

// awaitConnected waits until the session is connected; false once it is
// closed.
func (s *Session) awaitConnected() bool {
	for {
		s.st.mu.Lock()
		st, changed := s.st.state, s.st.changed
		s.st.mu.Unlock()
		switch {
		case s.isClosed() || st == StateClosed:
			return false
		case st == StateConnected:
			return true
		}
		select {
		case <-changed:
		case <-s.life.ctx.Done():
			return false
		}
	}
}

// shut ends the writer as the session closes: what is queued will not be
// sent by it.
func (q *writeQueue) shut() {
	q.mu.Lock()
	q.closed, q.running = true, false
	ws := q.queue
	q.queue = nil
	clear(q.deletes)
	if q.timer != nil {
		q.timer.Stop()
	}
	q.mu.Unlock()
	for _, w := range ws {
		q.s.abandonWrite(w)
	}
}

// stop closes the queue (Session.Close); a writer that runs shuts it.
func (q *writeQueue) stop() {
	q.mu.Lock()
	running := q.running
	q.mu.Unlock()
	if !running {
		q.shut()
	}
}

// abandonWrite ends a write the writer will not send, the session closing:
// a create or a transaction fails with the session's end; a delete is moot
// when the session's Close closes its connection (the server then deletes
// the session's nodes), and under NewSession goes to the guaranteed
// delete, which Close waits for.
func (s *Session) abandonWrite(w *write) {
	if w.kind == writeDelete {
		if !s.link.ownsConn {
			s.deleteInBackground(opPath(w.ops[0]), w.owner)
		}
		return
	}
	w.err = s.closedErr()
	w.finish()
}
