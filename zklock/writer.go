package zklock

import (
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
	s.lead() // after a quiet spell, the lease's sync goes first (renew.go)
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

// flush makes the queue's lingering deletes go with the next batch, now
// if the writer is idle (Session.Flush).
func (q *writeQueue) flush() {
	q.mu.Lock()
	q.hurry = len(q.queue) > 0
	start := q.startLocked(true)
	q.mu.Unlock()
	if start {
		q.s.goBackground(q.run)
	}
}

// abandonWrite ends a write the writer will not send, the session closing:
// a create or a transaction fails with the session's end; a delete is moot
// when the session's Close closes its connection (the server then deletes
// the session's nodes), and under NewSession goes to the guaranteed
// delete, which Close waits for.
func (s *Session) abandonWrite(w *write) {
	if w.kind == writeDelete {
		w.told(s.closedErr())
		if !s.link.ownsConn {
			s.deleteInBackground(opPath(w.ops[0]), w.owner)
		}
		return
	}
	w.err = s.closedErr()
	w.finish()
}
