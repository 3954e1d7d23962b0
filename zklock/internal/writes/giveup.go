package writes

import (
	"context"

	"github.com/tierlock/tierlock/internal/mutant"
)

// What a caller that stops waiting is told, and the queue's close.

// Fate is what GiveUp made of a write.
type Fate uint8

// The fates.
const (
	// Over: the write had ended; its Result stands, and GiveUp cleaned up
	// after it (the node a create made).
	Over Fate = iota + 1
	// TakenBack: the write was taken back before its request was sealed:
	// nothing of it was or will be applied (its Result says Withdrawn).
	TakenBack
	// Abandoned: the write is out, or on its way: the writer settles it
	// and cleans up after it (a create's node deleted, or looked for by
	// its GUID; a write refused for another's op is not sent again).
)

// Abandoned is the fate of a write GiveUp left to the writer (see Fate).
const Abandoned Fate = TakenBack + 1

// GiveUp is what a caller does when it stops waiting for w, and it
// resolves the giving up against the write's end itself, as
// semaphore.Acquire's case <-done: does (the caller cleans up after
// nothing): a write not yet sealed into a request (queued, taken into a
// round not yet sealed, or back in the queue after its batch was
// refused) is taken back; a sealed one is left to the writer, which cleans
// up after it as it settles it and never sends it again; one that had
// ended is cleaned up here. A create's clean-up is the delete of the node
// it made, or, when its outcome or its node's owner is unknown, sweep (the
// search for its node by GUID).
func (q *Queue) GiveUp(w *Write, sweep func()) Fate {
	q.mu.Lock()
	switch {
	case w.stage == ended:
		q.mu.Unlock()
		if d := q.leftOver(w, sweep); d != nil && !mutant.On(mutGiveUpLeavesNode) {
			q.add(d) // behind what is queued, ahead of what its caller queues next
		}
		return Over
	case w.stage == sealed || w.stage == taken && mutant.On(mutant.UnknownBeforeWire):
		if w.kind != Txn || !mutant.On(mutant.TxnUnknownRequeued) {
			w.abandoned, w.sweep = true, sweep
		}
		q.mu.Unlock()
		return Abandoned
	case w.stage == queued:
		q.removeLocked(w)
	}
	// Taken and not sealed: seal leaves it out.
	w.res, w.stage = Result{Verdict: Withdrawn, Err: ErrWithdrawn}, ended
	q.mu.Unlock()
	if w.bounded() {
		q.c.Ended(false, 0)
	}
	w.finish()
	return TakenBack
}

// Await waits for w to end, or for ctx to: then it gives w up (GiveUp)
// and returns what its caller is to be told: w's Result when it had
// ended; Withdrawn (Err: ctx's error) when it was taken back; else, once
// its request is on the wire, Unknown (Err: ctx's error), so that a
// request the caller sends next (a read-back) goes after it on the
// session and is answered after it is applied, if it is. Where the
// session cannot see its writes, that wait lasts until the answer.
func (q *Queue) Await(ctx context.Context, w *Write) Result {
	select {
	case <-w.done:
		return w.res
	case <-ctx.Done():
	}
	r, onWire := q.giveUpTold(w, ctx.Err())
	if onWire == nil {
		return r
	}
	<-onWire
	return settledOr(w, r)
}

// giveUpTold gives w up, its caller's wait ended by cause, and returns
// what the caller is to be told, and, when that is Unknown, the channel it
// must wait on first: Await's steps, apart, for a caller that cannot
// block (the explorer).
func (q *Queue) giveUpTold(w *Write, cause error) (Result, <-chan struct{}) {
	switch q.GiveUp(w, nil) {
	case Over:
		return w.res, nil
	case TakenBack:
		return Result{Verdict: Withdrawn, Err: cause}, nil
	}
	r := Result{Verdict: Unknown, Err: cause}
	if mutant.On(mutant.UnknownBeforeWire) {
		return r, nil // seeded bug: told before its request is on the wire
	}
	return r, w.wire.Load().ch // sealed for good: no other request will carry it
}

// settledOr is w's Result when it has ended, else r, what its caller who
// gave up is told. A write withdrawn since (its batch refused for another
// write's op) is told with r's cause, as one taken back is: ErrWithdrawn
// is the write path's, which its callers' callers cannot match.
func settledOr(w *Write, r Result) Result {
	select {
	case <-w.done:
		if w.res.Verdict == Withdrawn || w.res.Verdict == Unknown && mutant.On(mutUnknownToldWithdrawn) {
			return Result{Verdict: Withdrawn, Err: r.Err}
		}
		return w.res
	default:
		return r
	}
}

// leftOver is what a create given up leaves once it has ended: the delete
// of the node it made, which it returns for its caller to queue (its
// trace point told), or, when its outcome or its node's owner is unknown,
// sweep, which it runs. Anything else leaves nothing.
func (q *Queue) leftOver(w *Write, sweep func()) *Write {
	switch {
	case w.kind != Create:
	case w.res.Verdict == Applied && w.res.Session != 0:
		node := w.res.Results[0].String
		q.c.Queued(w.path, node, w.res.Session)
		return q.newDelete(w.path, node, w.res.Session)
	case w.res.Verdict == Applied || w.res.Verdict == Unknown:
		sweep()
	}
	return nil
}

// removeLocked takes w out of the queue; false if it is not there. q.mu
// is held.
func (q *Queue) removeLocked(w *Write) bool {
	for i, x := range q.queue {
		if x == w {
			q.queue = append(q.queue[:i], q.queue[i+1:]...)
			return true
		}
	}
	return false
}

// Stop closes the queue as the session closes: writes queued, or queued
// from now on, end Closed (deletes go to Conn.DeleteApart under
// Config.KeepDeletesOnClose, else with the session that owns their
// nodes); a writer that runs shuts it as it stops.
func (q *Queue) Stop() {
	q.mu.Lock()
	q.closed = true
	running := q.running
	q.mu.Unlock()
	if !running {
		q.shut()
	}
}

// shut ends the writer as the session closes: what is queued will not be
// sent by it. Each write taken out of the queue ends Closed before q.mu
// is released, so that a caller who gives one up meanwhile finds it over
// rather than ending it a second time (TestGiveUpWhileClosing); drop then
// tells the outside.
func (q *Queue) shut() {
	closedErr := q.c.Closed()
	q.mu.Lock()
	q.closed, q.running = true, false
	ws := q.queue
	q.queue = nil
	for _, w := range ws {
		endClosedLocked(w, closedErr)
	}
	clear(q.deletes)
	if q.timer != nil {
		q.timer.Stop()
	}
	q.mu.Unlock()
	for _, w := range ws {
		q.drop(w, closedErr)
	}
}

// endClosedLocked ends w Closed with the session's error, unless it is a
// delete (whose told drop tells). q.mu is held.
func endClosedLocked(w *Write, closedErr error) {
	if mutant.On(mutClosedUntold) {
		closedErr = nil // seeded bug: a Closed write with no error
	}
	if w.kind != Delete {
		w.res, w.stage = Result{Verdict: Closed, Err: closedErr}, ended
	}
}

// drop tells of w, which the writer will not send (the session is
// closing, closedErr, or w is too large), once it was ended.
func (q *Queue) drop(w *Write, closedErr error) {
	if w.kind == Delete {
		w.tell(closedErr)
		if q.cfg.KeepDeletesOnClose {
			q.c.DeleteApart(OpPath(w.ops[0]), w.owner)
		}
		return
	}
	if w.bounded() {
		q.c.Ended(false, 0)
	}
	w.finish()
}
