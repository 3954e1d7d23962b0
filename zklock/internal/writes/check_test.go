package writes_test

import (
	"github.com/tierlock/tierlock/zklock/internal/writes"
)

// The server's side of the explorer's checks, and the records they keep
// of every write (the properties, by side: explore_test.go's header). The
// caller's and the handler's side: told_test.go.

// told is what a write's caller was told.
type told uint8

const (
	toldNothing told = iota
	toldApplied
	toldNotApplied
	toldUnknown
)

// rec is the explorer's record of a write.
type rec struct {
	id       int // queueing order (an orphan's delete takes its create's)
	kind     writes.Kind
	path     string // the path whose order it keeps
	key      string // a create's prefix, a delete's node, a transaction's tag
	w        *writes.Write
	told     told
	readBack *wireReq
	applied  int
	last     *wireReq // the latest request it went in
	refused  int      // times its request was refused at another's op
	owner    int64    // a delete's node's session
	tells    int      // a released node's delete: times its handler was told (-1: it has none)
}

// recs are the records of a schedule's writes.
type recs struct {
	n          int
	byWrite    map[*writes.Write]*rec
	byKey      map[string]*rec
	maxApplied map[string]int
	creates    map[string]*rec // by the prefix of the nodes they make: the latest
	callerDel  bool            // a caller is queueing a delete
	handled    bool            // with a handler (a release)
	expect     []*rec          // (h): writes that must go again together next
}

func (rs *recs) init() {
	rs.byWrite, rs.byKey = make(map[*writes.Write]*rec), make(map[string]*rec)
	rs.maxApplied, rs.creates = make(map[string]int), make(map[string]*rec)
}

// queued records a write a caller queued.
func (rs *recs) queued(w *writes.Write, path string) *rec {
	rs.n++
	r := &rec{id: rs.n, kind: w.Kind(), path: path, w: w}
	ops := w.Ops()
	r.key = writes.OpPath(ops[len(ops)-1])
	rs.byWrite[w] = r
	if r.kind == writes.Create {
		rs.creates[r.key] = r
	} else {
		rs.byKey[r.key] = r
	}
	return r
}

// queuedDelete records a delete (Conn.Queued): a caller's release keeps
// its place in the order, and the write path's delete of what a create
// given up made takes the create's place (the writer puts it at the head
// of the queue, ahead of what the caller queued since; GiveUp, of a create
// that had ended, behind what is queued and ahead of what its caller
// queues next).
func (rs *recs) queuedDelete(w *world, path, node string, owner int64) {
	r := &rec{kind: writes.Delete, path: path, key: node, owner: owner, tells: -1}
	if rs.handled {
		r.tells = 0
	}
	if c := rs.creates[prefixOf(node)]; c != nil && !rs.callerDel {
		w.cover(coverOrphan)
		r.id = c.id
	} else {
		rs.n++
		r.id = rs.n
	}
	rs.byKey[node] = r
	w.logf("queued delete %s (owner %d)", short(node), owner)
}

// prefixOf is the prefix a sequential node was created with.
func prefixOf(node string) string {
	if len(node) < 10 {
		return node
	}
	return node[:len(node)-10]
}

func (rs *recs) of(w *writes.Write) *rec {
	if r := rs.byWrite[w]; r != nil {
		return r
	}
	return rs.byKey[writes.OpPath(w.Ops()[0])]
}

// sent notes the writes of a request handed to the connection.
func (rs *recs) sent(w *world, r *wireReq) {
	for _, x := range r.req.Writes {
		if rec := rs.of(x); rec != nil {
			rec.last = r
		}
	}
}

// applied checks a writer's request the server just made: (a), (d), (e),
// (f), (g).
func (rs *recs) applied(w *world, r *wireReq) {
	if r.answer.Err != nil {
		return
	}
	for _, x := range r.req.Writes {
		rec := rs.of(x)
		if rec == nil {
			w.fail("explorer", "a write it has no record of: %s", describe(r.req))
			continue
		}
		rec.applied++
		switch {
		case rec.applied > 1:
			w.fail("(f) at most once", "%s applied %d times", short(rec.key), rec.applied)
		case rec.told == toldNotApplied:
			w.fail("(e) not applied stays so", "%s applied after its caller was told it was not", short(rec.key))
		case rec.readBack != nil && rec.readBack.applied:
			w.fail("(g) unknown before next", "%s applied after its caller's read-back (#%d)", short(rec.key), rec.readBack.id)
		}
		if rec.id < rs.maxApplied[rec.path] {
			w.fail("(d) per-path order", "%s (queued %d) applied after a later write of %s (queued %d)", short(rec.key), rec.id, rec.path, rs.maxApplied[rec.path])
		}
		rs.maxApplied[rec.path] = max(rs.maxApplied[rec.path], rec.id)
		if rec.kind == writes.Create {
			rs.oneNode(w, rec.path)
		}
	}
}

// oneNode checks (a) on lock path p.
func (rs *recs) oneNode(w *world, p string) {
	kids, _, err := w.tree.Children(p)
	if err != nil {
		return
	}
	n := 0
	for _, k := range kids {
		node := p + "/" + k
		if _, st := w.tree.Exists(node); st == nil || st.EphemeralOwner != w.sid {
			continue
		}
		if c := rs.creates[prefixOf(node)]; c != nil && unknownOwner(c) || w.handedOver(node) {
			continue
		}
		n++
	}
	if n > 1 {
		w.fail("(a) one node per path", "session %d has %d nodes on %s: %v", w.sid, n, p, kids)
	}
}

// handedOver reports whether node's delete was handed over to be retried
// alone (Conn.DeleteApart) and is not done.
func (w *world) handedOver(node string) bool {
	for _, j := range w.bg {
		if j.node == node && !j.done {
			return true
		}
	}
	return false
}

// unknownOwner: a create whose outcome or owner is unknown (its node is
// protection mode's to find).
func unknownOwner(c *rec) bool {
	select {
	case <-c.w.Done:
	default:
		return false
	}
	r := c.w.Result()
	return r.Verdict == writes.Unknown || r.Verdict == writes.Applied && r.Session == 0
}

// answered looks at a writer's answer: a refused multi sets (h)'s
// expectation of the next request.
func (rs *recs) answered(w *world, r *wireReq, a writes.Answer) {
	rs.expect = nil
	if r.req.Single || len(a.Results) != len(r.req.Ops) || a.Err == nil {
		return
	}
	failing := -1
	for i, res := range a.Results {
		if res.Error != nil {
			failing = i
			break
		}
	}
	off, fresh := 0, true
	var others []*rec
	for _, x := range r.req.Writes {
		rec := rs.of(x)
		if failing < off || failing >= off+len(x.Ops()) {
			others = append(others, rec)
			fresh = fresh && rec.refused == 0
			rec.refused++
		}
		off += len(x.Ops())
	}
	if len(others) > 0 {
		w.cover(coverRefusedOther)
	}
	if fresh {
		rs.expect = others
	}
}

// checkRound checks (h) on a round the writer sends.
func (w *world) checkRound(reqs []*writes.Request) {
	if len(reqs) > 1 {
		w.cover(coverApart)
	}
	if len(reqs) == w.cfg.MaxApart && len(reqs) > 1 {
		w.cover(coverApartCap)
	}
	if len(reqs) > max(1, w.cfg.MaxApart) {
		w.fail("(h) bounded round", "%d requests in one round (MaxApart %d)", len(reqs), w.cfg.MaxApart)
	}
	want := w.recs.expect
	w.recs.expect = nil
	var live []*rec
	for _, r := range want {
		if r.w != nil && isDone(r.w) || r.kind == writes.Delete && r.owner != 0 && r.owner != w.sid {
			continue // given up since, or a delete made moot by a new session
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	for _, q := range reqs {
		if containsAll(w, q, live) {
			return
		}
	}
	w.fail("(h) refused batch together", "a refused batch's other writes %s did not go again together in the next request (%s)", keys(live), describeAll(reqs))
}

func containsAll(w *world, q *writes.Request, rs []*rec) bool {
	in := make(map[*rec]bool)
	for _, x := range q.Writes {
		in[w.recs.of(x)] = true
	}
	for _, r := range rs {
		if !in[r] {
			return false
		}
	}
	return true
}

// final checks (c) and (e) once the world is quiescent.
func (w *world) final() {
	for _, c := range w.callers {
		if c.state != sDone {
			w.fail("(c) no write stranded", "caller %d stuck in %s", c.id, c.state)
		}
	}
	if n := w.q.Len(); n > 0 {
		w.fail("(c) no write stranded", "%d writes left in the queue", n)
	}
	for wr, r := range w.recs.byWrite {
		if !isDone(wr) {
			w.fail("(c) no write stranded", "%s never ended", short(r.key))
			continue
		}
		if v := wr.Result().Verdict; v != writes.Applied && v != writes.Unknown && r.applied > 0 {
			w.fail("(e) not applied stays so", "%s ended %v but was applied", short(r.key), v)
		}
	}
	for _, p := range w.lockPaths() {
		kids, _, _ := w.tree.Children(p)
		for _, k := range kids {
			if _, st := w.tree.Exists(p + "/" + k); st != nil && st.EphemeralOwner == w.sid {
				w.fail("(c) no write stranded", "node %s/%s of the session left behind", p, short(k))
			}
		}
	}
}

func isDone(w *writes.Write) bool {
	select {
	case <-w.Done:
		return true
	default:
		return false
	}
}
