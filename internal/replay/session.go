package replay

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tierlock/tierlock/internal/trace"
)

// session is the state of one recorded process (a session object, the
// model's p): proctype session's variables as the client knows them, and
// the locks of the process by path (proctype goroutine's, one gate each).
type session struct {
	c    *Checker
	file string
	wall int64 // the file's clock origin (Unix ns), for the checks across processes
	sid  int64 // sid[p]: the session id the steps carry
	// ended is a session the server answered expired (a handshake with no
	// session): go-zookeeper's session id is 0 from then on, before the
	// event says so and before a new session comes, so the code's sid[p]
	// has changed (grantGone holds) while the steps still carry the old.
	ended int64
	conn  bool // conn[p], as the client sees it (session events)
	lease bool // lease[p]: renewed, and no lapse or new session since
	// expiryOnly is the session's loss policy (policy.go): holds survive
	// disconnections. Not in twotier.pml.
	expiryOnly bool
	// deadline is the last renew's Until (checked against the bound the
	// replay derives: bounds.go).
	deadline int64
	// What the server and the wire said (bounds.go): the least session
	// timeout granted to each session id (lease.go's T), the latest
	// granted, whether the writes are recorded (zklock.Connect's tap),
	// their starts, the touches, the latest connect request's write whose
	// answer gave each session id, the servers' tick the session was told
	// (untold: a session step told none), and the request whose answer is
	// being applied.
	server    map[int64]int64
	timeout   int64
	tapped    bool
	writes    []wrote
	touches   []touch
	shook     map[int64]int64
	tick      int64
	untold    bool
	probed    int64 // the tick a probe read: half the least timeout a server grants (0: none)
	answering request
	// The chains of the current session (bounds.go): the write time of
	// its latest proof answered (a k for the proofs handed over after it),
	// and the latest k a proof answered closed; -1: none.
	lastK, chainK int64
	now           map[int64][]int64    // grant verdicts "now" by owner, when judged, not yet followed by their grant
	sent          map[string][]request // requests sent, not answered, by key: the session's wire
	valid         int                  // holds of the session whose span is open (timing.go)
	overdue       int64                // the deadline a step was found late for (timing.go)
	dels          map[string]*del
	// writer: the session's writes go through its writer
	// (zklock/internal/writes/writer.go), as
	// the code's have since main 54c8475; outCreates are the prefixes of
	// the creates in its requests unanswered.
	writer     bool
	outCreates map[string]bool
	owners     map[string]int64 // the session each node of ours was made in, until its delete is queued
	taken      []string         // deletes taken (del_take) that no create has carried yet
	sweep      map[string]bool  // prefixes of creates whose outcome was unknown or abandoned
	locks      map[string][]*lock
	epoch      int                    // lapses, disconnections and new sessions: what ends holds
	owed       map[string]*trace.Step // held nodes whose loss a lapse or disconnection owes
	last       int64                  // T of the last step
	prev       trace.Kind             // the kind of the last step
	touched    *lock                  // the lock the step under way concerns
	run        string                 // the flush under way: its first delete
}

// del is one of the session's deletes (the model's pend, stale, onwire
// and bgdel, which a session keeps per node here: the model's queue holds
// one per lock path, the writer's FIFO any number).
type del struct {
	path  string
	state int
	batch string // the flusher's batch it was sent in (its first node)
	by    *lock  // the lock whose node it is
	req   uint64 // the writer's request it is in while delWire (its send's Seq), 0 for the model's
	owner int64  // the session its node was made in, 0 when unknown
}

// oldAt reports whether d's node was made in a session other than sid:
// the writer drops such a delete unsent (dropMoot), and under the model's
// rendering a create never carries it (the code before the writer sent
// that create alone and the delete in the background).
func (d *del) oldAt(sid int64) bool { return d.owner != 0 && d.owner != sid }

// The states of a delete.
const (
	delPending    = iota // pend[p]: queued (the writer's queue), untaken, in no request
	delTaken             // stale[p]: taken by a create (takePending)
	delFlushed           // taken by the flusher, not yet written
	delWire              // onwire[p]: in a request on the wire (the writer's, the flusher's, a multi's)
	delBackground        // bgdel[p]: retried by deleteGuaranteed
)

var delNames = [...]string{"queued", "taken", "flushed", "wire", "background"}

func newSession(c *Checker, file string) *session {
	return &session{c: c, file: file, now: map[int64][]int64{}, sent: map[string][]request{}, dels: map[string]*del{},
		outCreates: map[string]bool{},
		owners:     map[string]int64{}, server: map[int64]int64{}, shook: map[int64]int64{},
		sweep: map[string]bool{}, locks: map[string][]*lock{}, owed: map[string]*trace.Step{}, conn: true,
		lastK: -1, chainK: -1}
}

// step applies one recorded step, or refuses it.
func (s *session) step(st trace.Step) error {
	s.last, s.touched = st.T, nil
	defer func() { s.prev = st.Kind }()
	s.onTime(st)
	if err := s.follow(st); err != nil {
		return err
	}
	switch st.Kind {
	case trace.GateEnter:
		return s.at(s.forGateEnter(st.Path)).gateEnter()
	case trace.GatePass:
		return s.at(s.forPass(st.Path, "")).gatePass()
	case trace.GateLeave:
		return s.at(s.forLeave(st.Path)).gateLeave()
	case trace.Handoff:
		return s.at(s.forPass(st.Path, st.Node)).handoff(st)
	case trace.Send:
		return s.send(st)
	case trace.Answer:
		return s.answer(st)
	case trace.Turn:
		return s.at(s.forTurn(st.Node)).turn(st)
	case trace.Grant:
		if st.Path == "" {
			return s.verdict(st)
		}
		return s.at(s.byNode(st.Node)).granted(st)
	case trace.Release:
		return s.at(s.byNode(st.Node)).release(st)
	case trace.DelAdd:
		return s.at(s.forDelAdd(st)).delAdd(st)
	case trace.DelTake:
		return s.delTake(st)
	case trace.DelFlush:
		return s.delFlush(st)
	}
	return s.sessionStep(st)
}

// sessionStep applies the steps of proctype session: events, renewals,
// lapses, losses.
func (s *session) sessionStep(st trace.Step) error {
	switch st.Kind {
	case trace.Event:
		return s.event(st)
	case trace.Renew:
		return s.renew(st)
	case trace.Lapse:
		// lapse(p): "lease[p] && (!conn[p] || cutp == p) -> lease[p] = 0;
		// losehold(p)". A cut is invisible to the client, so the guard is
		// the lease alone; a lapse while linked to the leader (a slow
		// round trip) is left out of the model and only ends holds early.
		s.lapseOnTime(st)
		s.lease = false
		s.endHolds(st)
		return nil
	case trace.Lose:
		return s.lose(st)
	case trace.SessionOpen:
		return s.open(st)
	case trace.Handshake:
		s.handshake(st)
		return nil
	case trace.Write:
		s.wrote(st)
		return nil
	case trace.Touch:
		s.touchSeen(st.At, st.Until)
		return nil
	}
	return refusef("a step of kind %q, which the model has no transition for", st.Kind)
}

// follow notes a new session id: the model's reconnection after expire(p),
// "expired[p] -> expired[p] = 0; sid[p] = 1 - sid[p]; lease[p] = 0 /*
// lease.reset */". The holds of the old session are over.
func (s *session) follow(st trace.Step) error {
	if st.Sid == 0 || st.Sid == s.sid {
		return nil
	}
	if s.sid != 0 {
		s.lease = false
		s.lastK, s.chainK = -1, -1 // lease.reset
		clear(s.now)
		s.endHolds(st)
	}
	s.sid = st.Sid
	return nil
}

// endHolds is losehold(q) as the client meets it: every valid hold of the
// session ends at st (a lapse, a disconnection, a new session), and each
// is owed a loss step ("hlost[q] = 1").
func (s *session) endHolds(st trace.Step) {
	s.epoch++
	s.all(func(l *lock) {
		if l.zkHeld && !l.hlost {
			if _, ok := s.owed[l.node]; !ok {
				c := st
				s.owed[l.node] = &c
			}
		}
		l.endSpan(s.global(st.T))
	})
}

// event applies a session state seen by the client; watch events are the
// model's "wev[p] -> wev[p] = 0; goto list", which asks nothing.
func (s *session) event(st trace.Step) error {
	switch {
	case strings.HasSuffix(st.Note, "StateDisconnected"), strings.HasSuffix(st.Note, "StateExpired"):
		// disconnect(q): "conn[q] = 0; ... losehold(q) /* observe:
		// StateDisconnected ends the holds */" (an expiry-only session's
		// disconnection ends none: policy.go)
		s.conn = false
		if s.endsHolds(strings.HasSuffix(st.Note, "StateExpired")) {
			s.endHolds(st)
		}
		// failed(q) of the flusher's deletes not yet written: "LIVE(a) ->
		// bgdel[q] = bgdel[q] | BIT(a)" (the code's request fails unwritten
		// and falls back to the guaranteed delete)
		for _, d := range s.dels {
			if d.state == delFlushed {
				d.state = delBackground
			}
		}
	case strings.HasSuffix(st.Note, "StateHasSession"):
		// reconnect: "!conn[p] -> conn[p] = 1"
		s.conn = true
	}
	return nil
}

// expireSpans ends the validity of the session's holds at the lease's
// deadline d, which passed unrenewed (a pause, say, that the lapse's timer
// did not see in time).
func (s *session) expireSpans(d int64) {
	s.all(func(l *lock) { l.endSpan(s.global(d)) })
}

// verdict is Floor.Grant's look at a node that leads: grantNow's guard,
// "conn[p] && lease[p] && zsid[p] == sid[p]", or grantGone's, "zsid[p] !=
// sid[p]"; the others are waits (the guards false).
func (s *session) verdict(st trace.Step) error {
	switch st.Note {
	case "now":
		switch {
		case !s.conn && !s.mayGrantDown():
			return refuse("granted while disconnected (grantNow: conn[p])")
		case !s.lease:
			return refuse("granted with no lease: no renew since the last lapse or new session (grantNow: lease[p])")
		case st.Owner != s.sid:
			return refusef("granted a node of session %d in session %d (grantNow: zsid[p] == sid[p])", st.Owner, s.sid)
		}
		s.verdictOnTime(st)
		s.now[st.Owner] = append(s.now[st.Owner], st.T)
	case "gone":
		if st.Owner == s.sid && st.Owner != s.ended {
			return refuse("a node found gone with its session, which is the current one (grantGone: zsid[p] != sid[p])")
		}
	}
	return nil
}

// lose is losehold's "hlost[q] = 1" for one hold, which only a lapse, a
// disconnection or a new session may cause.
func (s *session) lose(st trace.Step) error {
	cause, ok := s.owed[st.Node]
	if !ok && !strings.Contains(st.Note, "closed") {
		return refusef("a loss (%s) told with no lapse, disconnection or new session since the hold began: "+
			"losehold runs only in lapse(p) and disconnect(p)", st.Note)
	}
	if ok {
		s.lossOnTime(st, cause)
	}
	delete(s.owed, st.Node)
	s.all(func(l *lock) {
		if l.zkHeld && l.node == st.Node {
			l.hlost = true
			l.endSpan(s.global(st.T))
		}
	})
	return nil
}

// global is a time of this file on the merged clock.
func (s *session) global(t int64) int64 { return s.wall + t }

// finish checks what a complete trace owes: every hold a lapse or a
// disconnection ended was told.
func (s *session) finish() *trace.Step {
	var first *trace.Step
	for _, st := range s.owed {
		if first == nil || st.Seq < first.Seq {
			first = st
		}
	}
	return first
}

// stateAt names the model state of the session and of its locks on the
// path st concerns, as a violation reports it.
func (s *session) stateAt(st trace.Step) string {
	b := s.state()
	seen := map[string]bool{}
	for _, p := range []string{st.Path, lockOf(st.Path), lockOf(st.Node)} {
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		for _, l := range s.locks[p] {
			b += "; " + l.state()
		}
	}
	return b
}

// state names the model state of the session.
func (s *session) state() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sid=%d conn=%v lease=%v", s.sid, s.conn, s.lease)
	if len(s.owed) > 0 {
		fmt.Fprintf(&b, " owed=%d", len(s.owed))
	}
	var ds []string
	for n, d := range s.dels {
		ds = append(ds, delNames[d.state]+":"+n)
	}
	sort.Strings(ds)
	if len(ds) > 4 {
		ds = append(ds[:4], fmt.Sprintf("(%d more)", len(ds)-4))
	}
	if len(ds) > 0 {
		fmt.Fprintf(&b, " dels=%v", ds)
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// state names the lock's model state.
func (l *lock) state() string {
	s := fmt.Sprintf("%s: gate=%v zst=%s", l.path, l.gate, zstNames[l.zst])
	if l.node != "" {
		s += " node=" + l.node
	}
	if l.zkHeld {
		s += fmt.Sprintf(" zkHeld hlost=%v", l.hlost)
	}
	if l.stale != "" {
		s += " stale=" + l.stale
	}
	if l.unknown {
		s += " mayExist"
	}
	if l.passOwed > 0 || l.passed {
		s += " passing"
	}
	return s
}
