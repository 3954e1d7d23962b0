package writes_test

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/writes"
)

// The caller's and the handler's side of the explorer's checks: what each
// call returns and what each delete's handler is told, held to the history
// the double recorded (each request: written, applied and in which
// session, what the server answered, what the writer got). The properties
// are listed in explore_test.go's header.

// The session's errors, as the explorer's Conn gives them: the checks tell
// them from every other error (the server's, the connection's, the
// caller's).
var (
	errSessionClosed = errors.New("explorer: the session closed")
	errGone          = fmt.Errorf("explorer: the node went with its session: %w", zk.ErrNoNode)
)

// observe notes what a write's caller was told, r (gaveUp: told as it gave
// up, Queue.Await's answer), and checks it against the history: (b), (e),
// (j), (k), (l), (m).
func (rs *recs) observe(w *world, rec *rec, r writes.Result, gaveUp bool) {
	switch r.Verdict {
	case writes.Applied:
		rec.told = toldApplied
		rs.toldApplied(w, rec, r)
		return
	case writes.Unknown:
		rec.told = toldUnknown
		if gaveUp && (rec.last == nil || !rec.last.written) && !isDone(rec.w) {
			w.fail("(k) unknown once on the wire", "%s told unknown as its caller gave up, before its request was written", short(rec.key))
		}
		return
	case writes.Refused:
		w.cover(coverRefusedOwn)
		rs.ownOp(w, rec, r)
	default:
		w.toldCause(rec, r)
	}
	rs.toldNotApplied(w, rec)
}

// toldCause checks (l) and (m) on a write told it was not sent: closed,
// withdrawn or too large.
func (w *world) toldCause(rec *rec, r writes.Result) {
	switch r.Verdict {
	case writes.Closed:
		w.cover(coverClosedWrite)
		if !errors.Is(r.Err, errSessionClosed) {
			w.fail("(m) told its cause", "%s told closed with %v, not the session's error", short(rec.key), r.Err)
		}
	case writes.Withdrawn:
		if !errors.Is(r.Err, errCtx) {
			w.fail("(m) told its cause", "%s told withdrawn with %v, not its caller's ctx's error", short(rec.key), r.Err)
		}
	case writes.TooLarge:
		w.cover(coverTooLarge)
		if n := w.aloneSize(rec.w); !errors.Is(r.Err, writes.ErrTooLarge) || rec.last != nil || n <= w.cfg.MaxBytes {
			w.fail("(l) within the bound", "%s told too large (%v) at %d bytes alone (MaxBytes %d), sent %v", short(rec.key), r.Err, n, w.cfg.MaxBytes, rec.last != nil)
		}
	}
}

// toldNotApplied checks (e) on the caller's side, as it is told that rec
// was not applied: the server has not applied it, and the write itself
// ended so (a caller told "not applied" of a write whose outcome is
// unknown to the write path is told more than it knows).
func (rs *recs) toldNotApplied(w *world, rec *rec) {
	rec.told = toldNotApplied
	if rec.applied > 0 {
		w.fail("(e) not applied stays so", "%s told not applied after the server applied it", short(rec.key))
	}
	switch v := rec.w.Result().Verdict; {
	case !isDone(rec.w):
		w.fail("(e) not applied stays so", "%s told not applied while it is not over", short(rec.key))
	case v == writes.Applied || v == writes.Unknown:
		w.fail("(e) not applied stays so", "%s told not applied; its write ended %v", short(rec.key), v)
	}
}

// toldApplied checks (j): the request rec last went in was applied, and r
// is what the server answered its ops, in the session that applied it.
func (rs *recs) toldApplied(w *world, rec *rec, r writes.Result) {
	q := rec.last
	if q == nil || !q.applied || q.answer.Err != nil {
		w.fail("(j) applied as told", "%s told applied, its request was not", short(rec.key))
		return
	}
	off := opOffset(w, q.req, rec)
	if len(r.Results) != len(rec.w.Ops()) || off+len(r.Results) > len(q.answer.Results) {
		w.fail("(j) applied as told", "%s told %d results for its %d ops", short(rec.key), len(r.Results), len(rec.w.Ops()))
		return
	}
	for i, res := range r.Results {
		if got := q.answer.Results[off+i]; res.String != got.String || res.Error != got.Error {
			w.fail("(j) applied as told", "%s told result %d %q (%v); the server answered %q (%v)", short(rec.key), i, res.String, res.Error, got.String, got.Error)
		}
	}
	if r.Session != 0 && r.Session != q.appliedIn {
		w.fail("(j) applied as told", "%s told applied in session %d; it was in %d", short(rec.key), r.Session, q.appliedIn)
	}
}

// opOffset is the index of rec's first op among its request's.
func opOffset(w *world, req *writes.Request, rec *rec) int {
	off := 0
	for _, x := range req.Writes {
		if w.recs.of(x) == rec {
			break
		}
		off += len(x.Ops())
	}
	return off
}

// ownOp checks (b): rec was refused at its own op, with that op's error,
// the first failing op of its request.
func (rs *recs) ownOp(w *world, rec *rec, r writes.Result) {
	q := rec.last
	if q == nil || q.req == nil {
		w.fail("(b) own op", "%s refused and never sent", short(rec.key))
		return
	}
	i := opOffset(w, q.req, rec) + r.Op
	if !firstFailing(q.answer, i) || !errors.Is(q.answer.Results[i].Error, r.Err) || r.Err == nil {
		w.fail("(b) own op", "%s refused at its op %d with %v; the server's answer to its request: %v", short(rec.key), r.Op, r.Err, q.answer.Err)
	}
}

// firstFailing reports whether op i failed a's request: its result is an
// error and no op before it failed.
func firstFailing(a writes.Answer, i int) bool {
	if i >= len(a.Results) || a.Results[i].Error == nil {
		return false
	}
	for j := range i {
		if a.Results[j].Error != nil {
			return false
		}
	}
	return true
}

// deleteTold is a released node's delete handler, (i): told once, and
// only the delete's own outcome: nil once its own request removed the
// node; the session's close once it closed; that the node went with its
// session once that session is over (and then never plain zk.ErrNoNode);
// else the error of its own op (the first failing of its request), or of
// its own request when no result per op came.
func (w *world) deleteTold(node string, err error) {
	r := w.recs.byKey[node]
	r.tells++
	w.logf("delete of %s told %v", short(node), err)
	if r.tells > 1 {
		w.fail("(i) a delete told its own outcome, once", "the delete of %s told %d times (now %v)", short(node), r.tells, err)
	}
	over := r.owner != 0 && r.owner != w.sid || w.noSession
	switch {
	case errors.Is(err, errSessionClosed):
		if !w.closed {
			w.fail("(i) a delete told its own outcome, once", "the delete of %s told the session closed; it is not", short(node))
		}
	case errors.Is(err, errGone):
		if r.last != nil && r.last.req != nil && len(r.last.got.Results) > 0 && r.last.got.Err != nil {
			w.cover(coverGoneAnswered)
		}
		if !over {
			w.fail("(i) a delete told its own outcome, once", "the delete of %s told its node went with its session (%d); the session is %d", short(node), r.owner, w.sid)
		}
	case errors.Is(err, zk.ErrNoNode) && over:
		w.fail("(i) a delete told its own outcome, once", "the delete of %s told %v: its node went with its session (%d), the session is %d", short(node), err, r.owner, w.sid)
	default:
		w.ownOutcome(r, err)
	}
}

// ownOutcome checks that err is what the delete r's own request got for
// it: nil only when it removed the node.
func (w *world) ownOutcome(r *rec, err error) {
	q := r.last
	if q == nil || q.req == nil {
		w.fail("(i) a delete told its own outcome, once", "the delete of %s told %v, never sent", short(r.key), err)
		return
	}
	got, i := q.got, opOffset(w, q.req, r)
	var own error
	switch {
	case len(got.Results) != len(q.req.Ops):
		own = got.Err // no result per op: its outcome unknown
	case firstFailing(got, i):
		own = got.Results[i].Error
	case got.Err != nil:
		w.fail("(i) a delete told its own outcome, once", "the delete of %s told %v; its request was refused at another op (%v)", short(r.key), err, got.Err)
		return
	}
	if err != own && !errors.Is(err, own) || own == nil && err != nil {
		w.fail("(i) a delete told its own outcome, once", "the delete of %s told %v; its own outcome was %v", short(r.key), err, own)
	}
	if ok, _ := w.tree.Exists(r.key); err == nil && ok {
		w.fail("(i) a delete told its own outcome, once", "the delete of %s told done while the node stands", short(r.key))
	}
}

// allTold checks, at the end, that every released node's delete was told.
func (w *world) allTold() {
	for _, r := range w.recs.byKey {
		if r.kind == writes.Delete && r.tells == 0 {
			w.fail("(i) a delete told its own outcome, once", "the delete of %s never told", short(r.key))
		}
	}
}

// The explorer's own count of a request's bytes, by jute's rules (a
// string or byte slice: a 4-byte length and its bytes; an int32: 4; a
// list: a 4-byte count and its items; a request: an 8-byte header; a
// multi: each op behind a 9-byte header, and a closing one), apart from
// the write path's (size.go), for (l). A path is counted as the server
// reads it, the world's chroot before it.

func (w *world) encoded(op any) int {
	str := func(s string) int { return 4 + len(s) }
	path := func(p string) int { return str(p) + w.chroot }
	switch o := op.(type) {
	case *zk.CreateRequest:
		n := path(o.Path) + 4 + len(o.Data) + 4 + 4
		for _, a := range o.Acl {
			n += 4 + str(a.Scheme) + str(a.ID)
		}
		return n
	case *zk.SetDataRequest:
		return path(o.Path) + 4 + len(o.Data) + 4
	case *zk.DeleteRequest:
		return path(o.Path) + 4
	case *zk.CheckVersionRequest:
		return path(o.Path) + 4
	}
	panic(fmt.Sprintf("explorer: an op of type %T", op))
}

// requestSize is what r encodes to, its header and body.
func (w *world) requestSize(r *writes.Request) int {
	if r.Single {
		return 8 + w.encoded(r.Ops[0])
	}
	n := 8 + 9
	for _, op := range r.Ops {
		n += 9 + w.encoded(op)
	}
	return n
}

// aloneSize is what wr's request alone encodes to.
func (w *world) aloneSize(wr *writes.Write) int {
	return w.requestSize(&writes.Request{Writes: []*writes.Write{wr}, Ops: wr.Ops(), Single: wr.Kind() != writes.Txn})
}

// checkSizes checks (l) on a round the writer sends: no request is larger
// than MaxBytes.
func (w *world) checkSizes(reqs []*writes.Request) {
	for _, r := range reqs {
		n := w.requestSize(r)
		if n > w.cfg.MaxBytes {
			w.fail("(l) within the bound", "a request of %d bytes (MaxBytes %d): %s", n, w.cfg.MaxBytes, describe(r))
		}
		if len(r.Writes) > 1 && 2*n > w.cfg.MaxBytes {
			w.cover(coverBigRequest)
		}
	}
}
