package replay

import (
	"github.com/tierlock/tierlock/internal/trace"
)

// A lock's deletes: its nodes given up queued for deletion (del_add), and
// the rule a create of the lock keeps against them (model/writes.pml's
// (a), one node per path, per Lock; model/deletes.pml's before the writer).

// pathClear is writes.pml's (a) (deletes.pml's before it) for a create: the lock's own released
// node's delete is carried, or on the wire already, never queued behind it
// nor held by the flusher unwritten (assertion (a), one node per path and
// lock: another Lock of the session on the path has its own node).
func (l *lock) pathClear(sid int64) error {
	if n := l.queuedDelete(sid); n != "" {
		return refusef("a create on a path whose released node %s has its delete %s, not on the wire "+
			"(writes.pml (a), one node per path: take it, or wait until it is sent)", n, delNames[l.s.dels[n].state])
	}
	return nil
}

// queuedDelete is a released node of the lock whose delete is queued or
// held by the flusher unwritten, or "": what a create of the lock in
// session sid may not go out ahead of. A queued delete of a node of
// another session is not one: the writer drops it unsent (its node went
// with its session).
func (l *lock) queuedDelete(sid int64) string {
	for n, d := range l.s.dels {
		if d.by == l && (d.state == delPending && !d.oldAt(sid) || d.state == delFlushed) {
			return n
		}
	}
	return ""
}

// delAdd is queueDelete(q, n), "pend[q] != NONE -> bgdel[q] = bgdel[q] |
// BIT(pend[q]); pend[q] = n" (under the writer, a delete queued behind
// every write queued before it), for a node of ours given up: released,
// lost, or abandoned by a wait that ended (which ends the acquisition:
// "queueDelete(p, znode[p]); znode[p] = NONE; zst[p] = IDLE").
func (l *lock) delAdd(st trace.Step) error {
	s := l.s
	if !l.mine[st.Node] {
		return refuse("a delete queued for a node that is not one of this lock's, or was queued already")
	}
	if l.zkHeld && l.node == st.Node && !l.hlost {
		return refuse("a delete queued for a node still held (release or losehold first)")
	}
	owner, err := s.ownerOf(st)
	if err != nil {
		return err
	}
	delete(l.mine, st.Node)
	if l.node == st.Node && l.zst != held {
		l.endWait()
		l.zst, l.node, l.ended = idle, "", true
	}
	if !s.writer {
		// the model's queue, one delete per path: the older one goes on
		// its own (the writer's FIFO keeps every one)
		for _, d := range s.dels {
			if d.path == l.path && d.state == delPending {
				d.state = delBackground
			}
		}
	}
	s.dels[st.Node] = &del{path: l.path, by: l, owner: owner}
	delete(s.owners, st.Node)
	return nil
}

// deleteOut is a released node of the lock whose delete is in a writer's
// request other than req, unanswered, or "".
func (l *lock) deleteOut(req uint64) string {
	for n, d := range l.s.dels {
		if d.by == l && d.state == delWire && d.req != 0 && d.req != req {
			return n
		}
	}
	return ""
}

// ownerOf is the session a delete queued at st is of: the one the node's
// create was answered in, which st's (the code's) must not contradict, or
// st's when the replay does not know it (a node protection mode found by
// its GUID: the code read its owner).
func (s *session) ownerOf(st trace.Step) (int64, error) {
	owner := s.owners[st.Node]
	switch {
	case owner == 0:
		return st.Owner, nil
	case st.Owner != 0 && st.Owner != owner:
		return 0, refusef("a delete queued naming session %d the owner of a node created in session %d", st.Owner, owner)
	}
	return owner, nil
}
