package replay

import (
	"github.com/tierlock/tierlock/internal/trace"
)

// The session's writer (zklock/internal/writes; model/writes.pml):
// every write the session has waiting (the creates of its acquisitions,
// on any path; the deletes of its released, lost or abandoned nodes; its
// holds' guarded transactions) is queued in one FIFO, and one request at a
// time takes a batch from its head; after a refused batch, the writes it
// puts back go apart (main 7241c04): each alone, side by side, at most one
// per lock path, and the next batch once every one is answered. A request is one step here, which
// names its writes in the order of their ops (trace.WritesSent), and its
// answer one step, which says what was applied: every write (the request's
// creates made the nodes it names, in order), none (the multi failed at
// write N: that write alone is settled, with the error; the others go back
// to the head of the queue, to be sent again), or, with no result per op,
// nothing known (each create's outcome is unknown: protection mode; each
// delete is queued again, at the head). A create whose caller gave up once
// it was taken (abandoned) is settled by the writer: what it made has its
// delete queued (del_add) at the head, and it is not sent again.
//
// twotier.pml's client takes a pending delete into its create's multi
// (del_take, then MULTI) or hands it to the flusher (del_flush, then DEL);
// its -DEMIT traces, and runs recorded before the writer, still replay by
// that rendering (wire.go). In the writer's terms the rule of
// model/writes.pml, (a), one node per path: a create of a Lock never goes
// out in a request while its released node's delete is queued (del_add,
// not yet in a request on the wire), and within one request the delete
// goes ahead of the create: the writes of a request are applied in their
// order, so a delete after the create is one the create went out ahead of
// (the seeded bug create-before-delete, writes.pml's CREATE_BEFORE_DELETE);
// nor while that delete is in another request unanswered, since two
// requests out at once are written in no order the writer fixes.

// request is one of the session's requests on the wire, unanswered: when
// it was handed to the client, for the writer's its writes, the session
// it was handed over in, and the write time of the latest proof of that
// session answered by then (the k of its chain, if it proves: -1 none).
type request struct {
	t      int64
	path   string // the first path it names: its waiter's key at the tap
	writes []trace.BatchWrite
	sid, k int64
}

// writerSend applies a request of the writer: each write in the order of
// its ops, a delete leaving the queue for the wire ("onwire[p] =
// onwire[p] | BIT(n)"), a create going out (the acquisition's "wire[p]!
// CRE,0,guid[p]", checked against its path's deletes as they stand at its
// place in the request). The deletes of nodes of a session that is over
// are dropped unsent (the code's dropMoot: the server deleted the nodes
// with their session).
func (s *session) writerSend(st trace.Step) error {
	s.writer = true
	for i, w := range st.Writes {
		var err error
		switch w.Op {
		case trace.OpDelete:
			err = s.sendDelete(st, w.Path)
		case trace.OpCreate:
			err = s.sendCreate(st, i, w.Path)
		case trace.OpTxn:
			// a guarded transaction: the server's check of the hold's node
			// guards it; its answer proves the session (below)
		default:
			err = refusef("a write %q of no kind the writer has (CRE, DEL, TXN)", w.Op)
		}
		if err != nil {
			return refusef("%v (write %d of %d of the request: %s %s)", err, i, len(st.Writes), w.Op, w.Path)
		}
	}
	for n, d := range s.dels {
		if d.state == delPending && d.oldAt(st.Sid) {
			delete(s.dels, n) // dropMoot: never sent, the node is gone with its session
		}
	}
	return nil
}

// sendDelete is a queued delete taken into the request st.
func (s *session) sendDelete(st trace.Step, node string) error {
	d := s.dels[node]
	switch {
	case d == nil:
		return refusef("the writer sends the delete of %s, which is not queued: never queued (del_add), "+
			"or settled by an answer already", node)
	case d.state != delPending:
		return refusef("the writer sends the delete of %s, which is %s, not queued: only a queued delete is "+
			"taken into a batch, and one settled or in a request unanswered is not", node, delNames[d.state])
	}
	d.state, d.req = delWire, st.Seq
	return nil
}

// sendCreate is the create with prefix, write i of the request st, going
// out: its acquisition's create (lock.create), once per request out.
func (s *session) sendCreate(st trace.Step, i int, prefix string) error {
	if s.outCreates[prefix] {
		return refusef("a create of %s sent again while the request carrying it is unanswered "+
			"(a write goes again only once the answer to its request settles it)", prefix)
	}
	l := s.at(s.forCreate(prefix))
	if n := l.queuedDelete(st.Sid); n != "" {
		for k := i + 1; k < len(st.Writes); k++ {
			if w := st.Writes[k]; w.Op == trace.OpDelete && w.Path == n {
				return refusef("a create ahead of its path's released node's delete %s in the same request "+
					"(write %d): a multi's ops are applied in order, and the delete goes first", n, k)
			}
		}
		return refusef("a create on a path whose released node %s has its delete queued, not in a request "+
			"on the wire (writes.pml (a), one node per path: the delete goes ahead of the create, in its batch "+
			"or an earlier one)", n)
	}
	if n := l.deleteOut(st.Seq); n != "" {
		return refusef("a create while its path's released node's delete %s is in another request, unanswered: "+
			"the session's requests are applied in the order they are written, which two requests out at once "+
			"do not fix (writes.pml (a), one node per path: a path's writes go one request after another; "+
			"apart, after a refused batch, at most one per path)", n)
	}
	s.outCreates[prefix] = true
	return l.create(trace.Step{Seq: st.Seq, T: st.T, Pid: st.Pid, Proc: st.Proc, Sid: st.Sid, Kind: trace.Send,
		Op: trace.OpCreate, Path: prefix})
}

// fits checks that the answer st is one of the request r: what it names
// applied or failed are writes of r.
func (r request) fits(st trace.Step) error {
	var creates []string
	for _, w := range r.writes {
		if w.Op == trace.OpCreate {
			creates = append(creates, w.Path)
		}
	}
	switch {
	case st.N >= len(r.writes):
		return refusef("an answer failing write %d of a request of %d write(s)", st.N, len(r.writes))
	case st.Out == "" && st.N >= 0:
		return refusef("an answer applied whole that names write %d failed", st.N)
	case st.Out != "" && len(st.Creates) > 0:
		return refusef("a failed answer naming %d node(s) made: a multi that fails applies none of its ops",
			len(st.Creates))
	case st.Out == "" && len(st.Creates) != len(creates):
		return refusef("an answer making %d node(s) to a request of %d create(s): an answer applies to the "+
			"writes of its request", len(st.Creates), len(creates))
	}
	for i, n := range st.Creates {
		if prefixOf(n) != creates[i] {
			return refusef("an answer naming %s made, where the request's create %d is of %s: an answer "+
				"applies to the writes of its request", n, i, creates[i])
		}
	}
	return nil
}

// writerAnswer applies the answer st to the writer's request r: every
// write applied ("LIVE(a) -> delnode(a)", mknode, and the write's
// "proved(p)"), or the multi failed at write N (that write settled with
// the error, the others queued again, at the head of the queue), or the
// outcome of each write unknown (failed(q): a create's "rc[p] = ERR", a
// delete's "bgdel[q] = bgdel[q] | BIT(a)").
func (s *session) writerAnswer(st trace.Step, r request) error {
	if err := r.fits(st); err != nil {
		return err
	}
	if st.Out == "" {
		s.proved(st) // a write: "proved(p)" may renew (once: one request)
	}
	made := st.Creates
	for i, w := range r.writes {
		if st.N >= 0 && i != st.N {
			s.requeue(w) // not applied: the multi failed at another write
			continue
		}
		switch w.Op {
		case trace.OpDelete:
			s.settleDelete(w.Path, st.Out)
		case trace.OpCreate:
			node := ""
			if st.Out == "" {
				node, made = made[0], made[1:]
			}
			s.settleCreate(st, w.Path, node)
		}
	}
	return nil
}

// requeue puts a write of a failed multi back in the queue: a delete is
// queued again (a create of its path must wait for it again), a create is
// no longer on the wire (its acquisition still waits for it).
func (s *session) requeue(w trace.BatchWrite) {
	switch w.Op {
	case trace.OpDelete:
		if d := s.dels[w.Path]; d != nil && d.state == delWire {
			d.state = delPending
		}
	case trace.OpCreate:
		delete(s.outCreates, w.Path)
	}
}

// settleDelete is a delete's outcome (writer.go's end): done when applied
// or when its node was gone already; refused by the server (an ACL, say),
// the guaranteed retry's, alone; of unknown outcome, queued again at the
// head, to be sent again in the queue's order until its node or its
// session is gone. The classes do not tell every refusal from an unknown
// outcome (ErrClosing is a refusal and "conn"; "err" is either): such a
// delete is queued again, and may be sent by the writer or by the retry
// (retrySend takes a queued delete to the background).
func (s *session) settleDelete(node, out string) {
	d := s.dels[node]
	switch {
	case d == nil:
	case out == "" || out == "nonode":
		delete(s.dels, node)
	case out == "refused" || out == "exists" || out == "ctx":
		d.state = delBackground
	default:
		d.state = delPending
	}
}

// settleCreate is a create's outcome, given to its acquisition as the
// answer of a create alone (lock.created): node made, or the error.
func (s *session) settleCreate(st trace.Step, prefix, node string) {
	delete(s.outCreates, prefix)
	l := s.byPrefix(prefix)
	if l == nil {
		// its acquisition ended and another began, with another prefix:
		// whatever it made is deleted once found (the code's abandon)
		s.sweep[prefix] = true
		return
	}
	a := st
	a.Op, a.Path, a.Node, a.Creates, a.N = trace.OpCreate, prefix, node, nil, 0
	s.at(l).created(a)
}
