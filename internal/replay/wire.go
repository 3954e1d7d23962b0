package replay

import (
	"github.com/tierlock/tierlock/internal/trace"
)

// The session's wire: requests sent and answered, and the deletes of
// released nodes (pend, stale, onwire, bgdel in twotier.pml). A request of
// the session's writer (a send with Writes) is writer.go's; the take of a
// pending delete by a create (del_take, MULTI) and the flusher (del_flush,
// DEL) rendered here are twotier.pml's steps, which its -DEMIT traces and
// runs recorded before the writer (main 54c8475) take.

// key names a request on the wire by its op and what it concerns; a
// retry's delete is not the flusher's.
func key(st trace.Step) string {
	k := string(st.Op) + " " + st.Path
	switch {
	case st.Op == trace.OpGetW:
		k = string(st.Op) + " " + stepNode(st)
	case st.Op == trace.OpDelete && st.Retry:
		k = "RETRY " + stepNode(st)
	case st.Op == trace.OpDelete:
		k = "DEL " + stepNode(st)
	}
	return k
}

// send applies a request handed to the connection: "wire[p]!op,...".
func (s *session) send(st trace.Step) error {
	var err error
	switch {
	case len(st.Writes) > 0:
		err = s.writerSend(st)
	case st.Op == trace.OpChildrenW:
		// a children watch (a semaphore's lease node waiting, recipe.go):
		// no transition of the model, but its answer is a listing
	case (st.Op == trace.OpCreate || st.Op == trace.OpMulti) && !isNode(st.Path):
		err = s.at(s.forCreate(st.Path)).create(st)
	case st.Op == trace.OpMulti, st.Op == trace.OpDelete && !st.Retry:
		err = s.flushSend(st)
	case st.Op == trace.OpDelete:
		err = s.retrySend(st)
	case st.Op == trace.OpGetW:
		err = s.at(s.forGetW(st.Path)).getW()
	}
	if err == nil {
		k := key(st)
		s.sent[k] = append(s.sent[k], request{t: st.T, path: st.Path, writes: st.Writes, sid: st.Sid, k: s.lastK})
	}
	return err
}

// answer applies a request's answer, which needs the request on the wire:
// the leader's apply or serve, or failed(q) after a disconnection.
func (s *session) answer(st trace.Step) error {
	k := key(st)
	if len(s.sent[k]) == 0 {
		return refusef("an answer to no %s request on the wire", st.Op)
	}
	r := s.sent[k][0] // a session's requests are answered in the order they were sent
	s.answering = r
	if s.sent[k] = s.sent[k][1:]; len(s.sent[k]) == 0 {
		delete(s.sent, k)
	}
	if r.writes != nil {
		return s.writerAnswer(st, r)
	}
	return s.answered(st)
}

// answered applies the answer to a request other than the writer's: the
// model's create (or its multi carrying a delete), the flusher's delete,
// a guaranteed retry's, a listing, a sync, a guarded transaction recorded
// before the writer.
func (s *session) answered(st trace.Step) error {
	switch {
	case (st.Op == trace.OpCreate || st.Op == trace.OpMulti) && !isNode(st.Path):
		if st.Out == "" {
			s.proved(st) // a write: "proved(p)" may renew
		}
		return s.at(s.forCreate(st.Path)).created(st)
	case st.Op == trace.OpMulti, st.Op == trace.OpDelete:
		s.deleted(st)
	case (st.Op == trace.OpList || st.Op == trace.OpChildrenW) && st.Out == "":
		s.listed(st.Path) // a children watch's answer is read as a listing is (waiter.arm)
	case (st.Op == trace.OpSync || st.Op == trace.OpTxn) && st.Out == "":
		s.proved(st) // the sync, or a guarded write: "lease[p] = 1" follows
	}
	return nil
}

// delTake is takePending, "stale[p] = pend[p]": a pending delete taken by
// the create about to be sent.
func (s *session) delTake(st trace.Step) error {
	d := s.dels[st.Node]
	if d == nil || d.state != delPending {
		return refuse("a delete taken that is not pending (stale[p] = pend[p])")
	}
	d.state = delTaken
	s.taken = append(s.taken, st.Node)
	return nil
}

// notCarried applies a create sent alone on path in session sid to the
// deletes taken and not carried: its path's, and any of a node made in
// another session (createNode carries neither), go in the background (the
// code's deleteInBackground).
func (s *session) notCarried(path string, sid int64) {
	for i := 0; i < len(s.taken); i++ {
		if d := s.dels[s.taken[i]]; d != nil && (d.path == path || d.oldAt(sid)) {
			d.state = delBackground
			s.taken = append(s.taken[:i], s.taken[i+1:]...)
			i--
		}
	}
}

// pickTaken is the index in s.taken of the delete a multi on path sent in
// session sid carries: the one taken for path, else the oldest taken
// (takeOther); never one of a node made in another session, which
// createNode does not carry. -1 when there is none.
func (s *session) pickTaken(path string, sid int64) int {
	pick := -1
	for i, n := range s.taken {
		d := s.dels[n]
		switch {
		case d != nil && d.oldAt(sid):
		case d != nil && d.path == path:
			return i
		case pick < 0:
			pick = i
		}
	}
	return pick
}

// delFlush is deleteQueue.flush, "pend[p] != NONE -> wire[p]!DEL,pend[p],1"
// (its first half: the delete taken by the flusher).
func (s *session) delFlush(st trace.Step) error {
	d := s.dels[st.Node]
	if d == nil || d.state != delPending {
		return refuse("the flusher sends a delete that is not pending (pend[p] != NONE)")
	}
	d.state = delFlushed
	// One flush takes its deletes in a row: they go in one request, named
	// by the first (a delete, or a multi of them all).
	if s.prev != trace.DelFlush || s.run == "" {
		s.run = st.Node
	}
	d.batch = s.run
	return nil
}

// flushSend is the flusher's request on the wire: a delete, or a multi of
// every delete it took ("onwire[p] = onwire[p] | BIT(pend[p])").
func (s *session) flushSend(st trace.Step) error {
	if len(st.Nodes) > 0 {
		return s.batchSend(st)
	}
	node := stepNode(st)
	if d := s.dels[node]; d == nil || (d.state != delFlushed && d.state != delBackground) {
		return refuse("the flusher's delete of a node it did not take (deleteQueue.flush)")
	}
	batch := s.dels[node].batch
	for n, d := range s.dels {
		if n == node || (st.Op == trace.OpMulti && d.state == delFlushed && d.batch == batch) {
			d.state, d.batch = delWire, node
		}
	}
	return nil
}

// batchSend is the flusher's multi as recorded with every node it
// deletes (trace.DeletesSent): each must be one it took, and each is on
// the wire now, named by the first. (Without the list, the batch was
// inferred from a run of del_flush steps in a row, which another
// goroutine's step recorded in between splits.)
func (s *session) batchSend(st trace.Step) error {
	for _, n := range st.Nodes {
		if d := s.dels[n]; d == nil || (d.state != delFlushed && d.state != delBackground) {
			return refusef("the flusher's multi deletes %s, which it did not take (deleteQueue.flush)", n)
		}
	}
	for _, n := range st.Nodes {
		s.dels[n].state, s.dels[n].batch = delWire, st.Nodes[0]
	}
	return nil
}

// retrySend is deleteGuaranteed's attempt, "bgdel[p] != 0 ->
// wire[p]!DEL,n,0": only a node whose delete failed, was left over by a
// create that did not carry it, or was replaced (queueDelete), or a node
// of a create whose outcome is unknown (protection mode's sweep).
func (s *session) retrySend(st trace.Step) error {
	node := stepNode(st)
	// A delete the flusher took but could not write (its session over, say)
	// falls back to the guaranteed one, like a failed delete.
	if d := s.dels[node]; d != nil && (d.state == delBackground || d.state == delPending || d.state == delFlushed) {
		d.state = delBackground
		return nil
	}
	if s.sweep[prefixOf(node)] {
		return nil
	}
	// A wait given up (ctx, Lock.Close) while its create was out: the
	// node the create made is deleted once its answer comes (the code's
	// abandon; the model cancels only a queued wait).
	if l := s.byNode(node); l.node == node && l.zst == creating {
		l.abandon()
		return nil
	}
	state := "none"
	if d := s.dels[node]; d != nil {
		state = delNames[d.state]
	}
	return refusef("a guaranteed delete of a node with no failed or left-over delete (bgdel[p]; its delete: %s)", state)
}

// deleted applies a delete's answer: "LIVE(a) -> delnode(a)" and, for the
// flusher's, "ans && b -> lease[q] = 1"; NoNode is done too; an error
// hands the node to the background retry ("LIVE(a) -> bgdel[q] =
// bgdel[q] | BIT(a) /* guaranteed delete: retry */").
func (s *session) deleted(st trace.Step) {
	node := stepNode(st)
	var batch []string
	for n, d := range s.dels {
		if n == node || (!st.Retry && d.state == delWire && d.batch == node) {
			batch = append(batch, n)
		}
	}
	for _, n := range batch {
		switch {
		// a multi fails whole: one node gone, and none is deleted
		case st.Out == "" || (st.Out == "nonode" && st.Op == trace.OpDelete):
			delete(s.dels, n)
		default:
			s.dels[n].state = delBackground
		}
	}
	if st.Out == "" && !st.Retry {
		s.proved(st)
	}
}
