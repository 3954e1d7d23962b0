package replay

import (
	"strings"

	"github.com/tierlock/tierlock/internal/trace"
)

// lock is one lock path of a process: the gate and the acquisition of
// proctype goroutine. The model's G goroutines are interchangeable and
// only the gate's holder acts on the lock, so a lock needs no goroutine
// of its own: the gate's order says whose step each is (gate_enter starts
// a holder; a create's prefix, with its GUID, and then its node name the
// acquisition).
type lock struct {
	s     *session
	path  string
	gated bool // a gate was seen (tier.Lock); zklock alone has none
	gate  bool // gate[p] != 0
	// passOwed counts receivers past the gate whose giver has not yet
	// recorded its gate_pass (recorded once done); passed is a gate_pass
	// whose receiver has not entered yet (the model's order).
	passOwed int
	passed   bool
	zst      int    // zst[p]
	prefix   string // the create's prefix (GUID)
	sendSid  int64  // the session its create was sent in
	sentT    int64  // when it was sent
	node     string // znode[p]
	owner    int64  // zsid[p] of our node: 0 while unknown
	unknown  bool   // mayExist: the create's outcome unknown (protection mode)
	stale    string // stale[p]: the delete our create carries
	lists    int    // listings answered since the create or the last turn
	token    int64  // the pzxid of the listing that found our node first
	waitedOn int64  // the pzxid of the last listing that found a predecessor
	zkHeld   bool   // zkHeld[p]
	ended    bool   // an acquisition ended past the gate (released, or its node's delete queued): the gate's next leave is its
	hlost    bool   // hlost[p]
	span     *span  // the valid hold of this process on the path, if any
	mine     map[string]bool
	// maybePass marks an instance made by a gate entry while every other
	// instance's gate was held: a pass's receiver or another Lock, which
	// its next step tells (see forGateEnter).
	maybePass bool
}

// The states of an acquisition (zst[p], with the lead split out).
const (
	idle     = iota // IDLE
	creating        // CREATING: create sent, our node not read yet
	queued          // QUEUED: the last turn found a predecessor
	leading         // QUEUED, at lead: the last turn found our node first
	held            // HELD
)

var zstNames = [...]string{"idle", "creating", "queued", "leading", "held"}

// gateEnter is "gate enter": "(gate[p] == 0 || gate[p] == g + 1) -> gate[p]
// = g + 1", the gate free, or passed to this goroutine.
func (l *lock) gateEnter() error {
	l.gated, l.ended = true, false
	switch {
	case !l.gate:
		l.gate = true
	case l.passed:
		l.passed = false
	case l.zkHeld:
		l.passOwed++ // the giver's gate_pass is recorded once it is done
	default:
		return refuse("gate entered while another goroutine is past it (gate[p] == 0 || gate[p] == g + 1)")
	}
	return nil
}

// gatePass is holding's bounded local hand-off, "k < G && K > handoffs[p]
// && zkHeld[p] && !hlost[p] -> gate[p] = k + 1".
func (l *lock) gatePass() error {
	switch {
	case l.passOwed > 0:
		l.passOwed--
	case l.gate && l.zkHeld && !l.passed:
		l.passed = true
	default:
		return refuse("the gate passed on with no node kept (zkHeld[p] && !hlost[p] -> gate[p] = k + 1)")
	}
	return nil
}

// gateLeave is "gate[p] = 0", at the end of holding (the node released
// first) or of a wait given up.
func (l *lock) gateLeave() error {
	switch {
	case !l.gate:
		return refuse("the gate left while free (gate[p] = 0)")
	case l.zkHeld && l.passOwed == 0:
		return refuse("the gate left with the node still kept: release first (zkHeld[p] = 0, then gate[p] = 0)")
	}
	if l.passOwed > 0 {
		l.passOwed-- // the receiver leaves before its giver recorded the pass
		return nil
	}
	if l.zst != idle && l.zst != held {
		l.abandon()
	}
	l.gate, l.ended = false, false
	return nil
}

// abandon ends an acquisition given up with its create in flight or its
// node queued: whatever the create made is deleted in the background, and
// a create of unknown outcome is swept for (the code's abandon).
func (l *lock) abandon() {
	if l.prefix != "" {
		l.s.sweep[l.prefix] = true
	}
	l.zst, l.node, l.unknown = idle, "", false
}

// handoff is "zkHeld[p] && !hlost[p] -> handoffs[p]++; become(1)": the
// gate's new holder rides the node handed over.
func (l *lock) handoff(st trace.Step) error {
	switch {
	case !l.gate:
		return refuse("a hand-off ridden with the gate free")
	case !l.zkHeld || l.node != st.Node:
		return refuse("a hand-off of a node not kept (zkHeld[p])")
	case l.hlost:
		return refuse("a hand-off of a node lost (!hlost[p])")
	}
	return nil
}

// create is the acquisition's "wire[p]!CRE,0,guid[p]" or
// "wire[p]!MULTI,stale[p],guid[p]", after "stale[p] = pend[p]".
func (l *lock) create(st trace.Step) error {
	s := l.s
	switch {
	case l.gated && !l.gate:
		return refuse("a create with the gate free: only the gate's holder acquires")
	case l.zst == queued || l.zst == leading || l.zst == held:
		return refusef("a create while our node %s is %s: one node per lock", l.node, zstNames[l.zst])
	}
	if err := l.pathClear(); err != nil {
		return err
	}
	if st.Op == trace.OpMulti {
		if err := l.carry(st.Sid); err != nil {
			return err
		}
	} else if l.stale != "" {
		// "rc[p] == NONODE -> stale[p] = NONE; ... wire[p]!CRE" (or an
		// old session's delete, which the code sends on its own)
		l.stale = ""
	}
	if st.Op == trace.OpCreate {
		s.notCarried(l.path, st.Sid)
	}
	if st.Path != l.prefix {
		l.unknown = false
	}
	l.zst, l.prefix, l.sendSid, l.sentT, l.lists = creating, st.Path, st.Sid, st.T, 0
	return nil
}

// pathClear is deletes.pml's rule for a create: the lock's own released
// node's delete is carried, or on the wire already, never pending behind
// it nor held by the flusher unwritten (assertion (a), one node per path
// and lock: another Lock of the session on the path has its own node).
func (l *lock) pathClear() error {
	for n, d := range l.s.dels {
		if d.by == l && (d.state == delPending || d.state == delFlushed) {
			return refusef("a create on a path whose released node %s has its delete %s, not on the wire "+
				"(deletes.pml: take it, or wait until it is sent)", n, delNames[d.state])
		}
	}
	return nil
}

// carry takes the delete a multi carries: the one taken for this path, or
// the oldest taken (takeOther, of another path, only when this one has
// none), or stale[p] kept from a multi whose answer was lost.
func (l *lock) carry(sid int64) error {
	s := l.s
	pick := s.pickTaken(l.path, sid)
	switch {
	case pick >= 0:
		l.stale = s.taken[pick]
		s.taken = append(s.taken[:pick], s.taken[pick+1:]...)
	case l.stale == "":
		return refuse("a multi carrying no delete taken (stale[p] != NONE -> wire[p]!MULTI,stale[p],guid[p])")
	}
	if d := s.dels[l.stale]; d != nil {
		d.state = delWire // "onwire[p] = onwire[p] | BIT(stale[p])"
	}
	return nil
}

// created applies the create's (or multi's) answer, "rc[p]": our node,
// NONODE (the released node gone: create alone), or ERR (protection mode).
func (l *lock) created(st trace.Step) error {
	s := l.s
	switch {
	case st.Out == "":
		s.proved(st) // a write: "proved(p)" may renew
		l.mine[st.Node] = true
		if l.stale != "" && st.Op == trace.OpMulti {
			delete(s.dels, l.stale) // "stale[p] = NONE /* the multi deleted it */"
			l.stale = ""
		}
		if l.zst != creating || prefixOf(st.Node) != l.prefix {
			s.sweep[prefixOf(st.Node)] = true // answered after the wait was given up
			return nil
		}
		l.node, l.owner = st.Node, 0
		s.c.created(s, l.sentT, st)
		if st.Sid == l.sendSid {
			l.owner, s.owners[st.Node] = st.Sid, st.Sid // mknode: "zsid[q] = sid[q]", the session it was applied in
		} else {
			l.unknown = true // the session changed while it was out: protection mode
		}
	case st.Out == "nonode" && st.Op == trace.OpCreate:
		s.c.missing(l.path, s.global(st.T)) // the lock path is missing: made again before the next create
	case st.Out == "nonode" && st.Op == trace.OpMulti:
		s.c.missing(l.path, s.global(st.T)) // the released node gone, or the path missing
		if d := s.dels[l.stale]; d != nil {
			// "rc[q] = NONODE": the released node is gone, and the
			// create goes alone. Or, outside the model, the lock path is
			// gone (a container the server removed since a create on it
			// made it known, so a takeOther delete rode on it): nothing
			// was deleted, and createAndList deletes the node in the
			// background. The answer does not tell which: the delete
			// waits as a background one, which a delete's answer ends.
			d.state = delBackground
		}
		l.stale = ""
	case st.Out != "nonode":
		// "rc[p] == ERR -> mayExist = 1": protection mode, and the carried
		// delete may have gone with it or not
		l.unknown = true
		s.sweep[l.prefix] = true
		if d := s.dels[l.stale]; d != nil {
			d.state = delBackground
		}
	}
	return nil
}

// getW is watchpred's "wire[p]!GETW,x,0", after a turn that found a
// predecessor.
func (l *lock) getW() error {
	if l.zst != queued {
		return refusef("a watch set while our node is %s, not waiting (x < MAXN -> goto watchpred)", zstNames[l.zst])
	}
	return nil
}

// turn is wait's branch on a listing's answer: "x == FIRST -> goto lead",
// "x < MAXN -> goto watchpred", "x == GONE -> ... goto acquire".
func (l *lock) turn(st trace.Step) error {
	if err := l.turnAllowed(st); err != nil {
		return err
	}
	if l.node != st.Node {
		l.node, l.owner = st.Node, 0 // found by its GUID: its owner is the one findOwn read
		l.mine[st.Node] = true
	}
	l.lists = 0
	switch st.Note {
	case "first":
		l.zst, l.token = leading, st.Pzxid
	case "wait":
		l.zst, l.waitedOn = queued, st.Pzxid
	default:
		l.zst = idle // "zst[p] = IDLE; znode[p] = NONE; goto acquire"
	}
	return nil
}

// turnAllowed says whether the model reads a listing here: while our node
// is created or queued, a listing answered since (rl[p]), on our node, or
// on the node protection mode found by our GUID.
func (l *lock) turnAllowed(st trace.Step) error {
	found := l.unknown && strings.HasPrefix(st.Node, l.prefix)
	switch {
	case l.zst != creating && l.zst != queued:
		return refusef("a turn while our node is %s", zstNames[l.zst])
	case l.lists == 0 && !l.rereads(st):
		return refuse("a turn with no listing answered since our create or our last turn: " +
			"only a listing's answer (rl[p]) says where our node stands")
	case l.node == "" && !found:
		return refuse("a turn on a node whose create was not answered, nor found by its GUID (protection mode)")
	case l.node != "" && st.Node != l.node && !found:
		return refusef("a turn on %s, not our node %s", st.Node, l.node)
	case (st.Note == "gone") != (st.N < 0):
		return refusef("a turn %q at index %d", st.Note, st.N)
	case !ruleChecked(st.Node):
		l.s.c.res.RecipeTurns++ // a read or lease node: its recipe's rule (recipe.go)
	case (st.Note == "first") != (st.N == 0):
		return refusef("a turn %q at index %d", st.Note, st.N)
	}
	return nil
}

// rereads reports a turn on the last listing again: the code reads it
// again after a watch it could not set, where the model lists again ("x ->
// x = 0; goto list"); the same predecessor is watched once more, which is
// what a new listing would find, or not, and the watch then says.
func (l *lock) rereads(st trace.Step) bool {
	return st.Note == "wait" && l.zst == queued && st.Pzxid == l.waitedOn && st.Node == l.node
}

// granted is the acquisition's grant: lead's grantNow, "conn[p] &&
// lease[p] && zsid[p] == sid[p] -> ... zst[p] = HELD; ... become(0)", or
// its end without a hold (grantGone, a wait given up).
func (l *lock) granted(st trace.Step) error {
	s := l.s
	if st.Out != "" {
		if l.zst == leading {
			l.zst = idle // "zsid[p] != sid[p] -> ... goto acquire", or the wait's end
		}
		return nil
	}
	switch {
	case l.zst != leading || st.Node != l.node:
		return refusef("a grant of %s, which no listing found first since it was queued (x == FIRST -> goto lead)", st.Node)
	case st.Zxid != l.token:
		return refusef("a grant with token %d where the listing that found our node first had pzxid %d", st.Zxid, l.token)
	case l.owner != 0 && st.Owner != l.owner:
		return refusef("a grant naming session %d the owner of a node created in session %d (zsid[p]: the session the create was applied in)",
			st.Owner, l.owner)
	case len(s.now[st.Owner]) == 0:
		return refuse("a grant with no verdict now before it (grantNow)")
	}
	s.grantOnTime(st, s.now[st.Owner][0]) // the earliest: matched in order, the largest delay is least
	s.now[st.Owner] = s.now[st.Owner][1:]
	l.zst, l.zkHeld, l.hlost = held, true, false
	l.span = s.c.openSpan(s, l.path, st)
	return nil
}

// release is holding's "zkHeld[p] -> zkHeld[p] = 0; if :: !hlost[p] ->
// queueDelete(p, znode[p])", or dropZK, "zkHeld[p] && hlost[p] -> zkHeld[p]
// = 0".
func (l *lock) release(st trace.Step) error {
	if !l.zkHeld || l.node != st.Node {
		return refusef("a release of %s, which is not held (zkHeld[p])", st.Node)
	}
	l.zkHeld = false
	l.endSpan(l.s.global(st.T))
	l.zst, l.node, l.ended = idle, "", true
	return nil
}

// delAdd is queueDelete(q, n), "pend[q] != NONE -> bgdel[q] = bgdel[q] |
// BIT(pend[q]); pend[q] = n", for a node of ours given up: released,
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
	delete(l.mine, st.Node)
	if l.node == st.Node && l.zst != held {
		l.zst, l.node, l.ended = idle, "", true
	}
	for _, d := range s.dels {
		if d.path == l.path && d.state == delPending {
			d.state = delBackground // the older one goes on its own
		}
	}
	s.dels[st.Node] = &del{path: l.path, by: l, owner: s.owners[st.Node]}
	delete(s.owners, st.Node)
	return nil
}

// endSpan ends the validity of the lock's hold at time t (merged clock),
// or at the lease's deadline if that came first: a hold is valid only
// while the lease is (a process paused past it is told late, but its
// hold was over at the deadline, which is what the leader's expiry waits
// for).
func (l *lock) endSpan(t int64) {
	if l.span == nil {
		return
	}
	if d := l.s.deadline; d > 0 {
		t = min(t, l.s.global(d))
	}
	l.span.end = min(l.span.end, t)
	l.span = nil
	l.s.valid--
}
