package writes_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
)

// The scheduler: at each step the world lists the events it can take, and
// one is taken (random, from the seed, while exploring; from a list, when
// replaying). An event is a token, so that a schedule is a list of tokens:
//
//	tN     run task N of the write path (its writer, a timer's callback)
//	wrN    write request N of the first slot handed to the connection
//	ap     the server applies the first written request not yet applied
//	an     the first request on the wire gets its answer
//	cN     caller N steps; xN: caller N's ctx ends
//	bN     background job N (a delete handed over, a sweep) tries
//	tm     the earliest timer fires
//	fl     Flush: what is queued goes now (a caller waiting for its delete)
//	dc:B   the connection drops; B says of each written request not yet
//	       applied whether the server applies it first (a) or never (d)
//	rc     reconnect in the same session; rn: in a new one (expiry)
//	xp     the connection down, the client learns its session expired
//	       (SessionID says 0 until rn)
//	ex:B   the connection drops (B as for dc) with requests handed to it
//	       and not yet written, and comes back in a new session: they go
//	       out in it (go-zookeeper keeps them), sealed in the old one
//	odN    an operator deletes the first node of lock path N
//	rpN    the container lock path N is reaped (when empty)
//	dnN    an ACL on lock path N refuses deletes (lifted at the end)
//	cl:B   the Session closes (B as for dc)

// events lists what the world can do now, faults and ctx ends included
// while the budget lasts.
func (w *world) events(faults bool) []string {
	var evs []string
	for _, t := range w.tasks {
		if w.runnable(t) {
			evs = append(evs, "t"+strconv.Itoa(t.id))
		}
	}
	evs = append(evs, w.wireEvents()...)
	for i, c := range w.callers {
		if w.ready(c) {
			evs = append(evs, "c"+strconv.Itoa(i))
		}
	}
	for i, j := range w.bg {
		if w.bgReady(j) {
			evs = append(evs, "b"+strconv.Itoa(i))
		}
	}
	if w.armedTimer() {
		evs = append(evs, "tm")
	}
	if faults {
		evs = append(evs, w.faults()...)
	}
	return evs
}

// wireEvents lists what the connection can do: write, apply, answer.
func (w *world) wireEvents() []string {
	var evs []string
	if w.state != connUp {
		return nil
	}
	if len(w.unwritten) > 0 {
		for i := range w.unwritten[0] {
			evs = append(evs, "wr"+strconv.Itoa(i))
		}
	}
	for _, r := range w.wire {
		if !r.applied {
			evs = append(evs, "ap")
			break
		}
	}
	if len(w.wire) > 0 && w.wire[0].applied {
		evs = append(evs, "an")
	}
	return evs
}

// faults lists the faults and ctx ends the budget still allows.
func (w *world) faults() []string {
	var evs []string
	b := w.budget
	if b.flushes > 0 {
		evs = append(evs, "fl")
	}
	if b.ctxEnds > 0 {
		for i, c := range w.callers {
			if mayEnd(c) {
				evs = append(evs, "x"+strconv.Itoa(i))
			}
		}
	}
	if w.closed {
		return evs
	}
	if b.close {
		evs = append(evs, "cl")
	}
	evs = append(evs, w.connFaults()...)
	for i := range w.lockPaths() {
		if b.opDeletes > 0 {
			evs = append(evs, "od"+strconv.Itoa(i))
		}
		if b.reaps > 0 {
			evs = append(evs, "rp"+strconv.Itoa(i))
		}
		if b.denials > 0 {
			evs = append(evs, "dn"+strconv.Itoa(i))
		}
	}
	return evs
}

// connFaults lists the connection's faults the budget still allows: a
// drop, up; back, in a session or another, down.
func (w *world) connFaults() []string {
	b := w.budget
	switch {
	case w.state == connUp && b.expiries > 0 && len(w.unwritten) > 0 && b.drops > 0:
		return []string{"dc", "ex"}
	case w.state == connUp && b.expiries > 0 && len(w.unwritten) > 0:
		return []string{"ex"}
	case w.state == connUp && b.drops > 0:
		return []string{"dc"}
	case w.state != connDown:
		return nil
	case w.noSession:
		return []string{"rn"}
	case b.expiries > 0:
		return []string{"rc", "rn", "xp"}
	}
	return []string{"rc"}
}

// outcomes draws, for a drop or a close, whether the server applies each
// written request not yet applied: the event's B.
func (w *world) outcomes(rng *rand.Rand) string {
	var b strings.Builder
	for _, r := range w.wire {
		if !r.applied {
			if rng.IntN(2) == 0 {
				b.WriteByte('a')
			} else {
				b.WriteByte('d')
			}
		}
	}
	return b.String()
}

// do takes event ev; false if it is not one the world can take now.
func (w *world) do(ev string, faults bool) bool {
	name, arg, _ := strings.Cut(ev, ":")
	kind, n := splitEvent(name)
	if !w.can(name, faults) {
		return false
	}
	w.logf("-- %s", ev)
	switch kind {
	case "t":
		w.run(w.tasks[n])
	case "wr":
		w.write(n)
	case "ap":
		w.apply()
	case "an":
		w.answer()
	case "c":
		w.step(w.callers[n])
	case "x":
		w.end(w.callers[n])
	case "b":
		w.bgStep(w.bg[n])
	case "tm":
		w.fire()
	case "fl":
		w.budget.flushes--
		w.q.Flush()
	default:
		w.fault(kind, n, arg)
	}
	return true
}

// fault takes a fault event.
func (w *world) fault(kind string, n int, arg string) {
	apply := make([]bool, len(arg))
	for i := range arg {
		apply[i] = arg[i] == 'a'
	}
	switch kind {
	case "dc":
		w.budget.drops--
		w.recs.expect = nil
		w.drop(apply)
	case "rc", "rn":
		if kind == "rn" && !w.noSession {
			w.budget.expiries--
		}
		w.reconnect(kind == "rn")
	case "xp":
		w.budget.expiries--
		w.learnExpiry()
	case "ex":
		w.budget.expiries--
		w.recs.expect = nil
		w.drop(apply)
		w.reconnect(true)
	case "cl":
		w.budget.close = false
		w.recs.expect = nil
		w.closeSession(apply)
	case "od":
		w.budget.opDeletes--
		p := w.lockPaths()[n]
		if kids, _, _ := w.tree.Children(p); len(kids) > 0 {
			_ = w.tree.Delete(0, p+"/"+kids[0], -1)
		}
	case "rp":
		w.budget.reaps--
		_ = w.tree.Delete(0, w.lockPaths()[n], -1)
	case "dn":
		w.budget.denials--
		_, _ = w.tree.SetACL(w.lockPaths()[n], zk.WorldACL(zk.PermAll&^zk.PermDelete), -1)
	}
}

// can reports whether event name is among those the world can take.
func (w *world) can(name string, faults bool) bool {
	for _, e := range w.events(faults) {
		if e == name {
			return true
		}
	}
	return false
}

// splitEvent splits "wr3" into "wr" and 3.
func splitEvent(name string) (string, int) {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	n, _ := strconv.Atoi(name[i:])
	return name[:i], n
}

// settle ends a schedule: the faults stop (the connection back, ACLs
// lifted) and the world moves, by a fixed rule, until nothing can move;
// then the quiescent checks, then the Session's close and its drain.
func (w *world) settle() {
	for _, p := range w.lockPaths() {
		_, _ = w.tree.SetACL(p, anyone, -1)
	}
	w.heal()
	if !w.drain(20000) {
		w.fail("(c) no write stranded", "the world still moves after 20000 steps")
		return
	}
	w.final()
	if !w.closed {
		w.budget.close = true
		w.do("cl:"+strings.Repeat("a", len(w.wire)), true)
	}
	w.heal()
	if !w.drain(20000) {
		w.fail("(c) no write stranded", "the close still moves after 20000 steps")
		return
	}
	for _, t := range w.tasks {
		if t.wait != waitEnded {
			w.fail("(c) no write stranded", "task %d of the write path waits for ever (%d)", t.id, t.wait)
		}
	}
	w.allTold()
	if w.creates != w.ended {
		w.fail("(c) no write stranded", "%d creates held places in the bound, %d were given back", w.creates, w.ended)
	}
}

// cleanUp ends a schedule that broke a property early: the Session
// closes and the world drains, so that no goroutine of it is left.
func (w *world) cleanUp() {
	w.heal()
	if !w.closed {
		w.budget.close = true
		w.do("cl:", true)
	}
	w.heal()
	w.drain(20000)
}

// heal brings a dropped connection back, in the same session (a new
// one, if the client learnt it expired).
func (w *world) heal() {
	if w.state == connDown {
		w.logf("-- rc (settling)")
		w.reconnect(false)
	}
}

// drain takes the first event the world can take, faults aside, until
// there is none; false if that took more than limit steps.
func (w *world) drain(limit int) bool {
	for range limit {
		evs := w.events(false)
		if len(evs) == 0 {
			return true
		}
		w.do(evs[0], false)
	}
	return false
}

// explore runs seed's schedule: up to steps random events, then settle.
// It returns the events taken (the schedule, replayable) and what broke.
func explore(seed uint64, steps int, logged bool) (events, failures []string, log []string) {
	w := newWorld(seed, logged)
	rng := rand.New(rand.NewPCG(seed, 2))
	for range steps {
		evs := w.events(true)
		if len(evs) == 0 {
			break
		}
		ev := evs[rng.IntN(len(evs))]
		if ev == "dc" || ev == "cl" || ev == "ex" {
			ev += ":" + w.outcomes(rng)
		}
		w.do(ev, true)
		events = append(events, ev)
		if len(w.failures) > 0 {
			w.cleanUp()
			return events, w.failures, w.log
		}
	}
	w.settle()
	return events, w.failures, w.log
}

// replay runs seed's world through events (those it cannot take are
// skipped), then settles it.
func replay(seed uint64, events []string, logged bool) (failures, log []string) {
	w := newWorld(seed, logged)
	for _, ev := range events {
		w.do(ev, true)
		if len(w.failures) > 0 {
			w.cleanUp()
			return w.failures, w.log
		}
	}
	w.settle()
	return w.failures, w.log
}

// property names the property a failure broke.
func property(failure string) string {
	p, _, _ := strings.Cut(failure, ":")
	return p
}

// shrink removes events from a failing schedule while the same property
// still breaks, chunks first, then one at a time.
func shrink(seed uint64, events []string, prop string) []string {
	fails := func(evs []string) bool {
		f, _ := replay(seed, evs, false)
		return len(f) > 0 && property(f[0]) == prop
	}
	for size := len(events) / 2; size >= 1; size /= 2 {
		for i := 0; i+size <= len(events); {
			try := append(append([]string{}, events[:i]...), events[i+size:]...)
			if fails(try) {
				events = try
			} else {
				i += size
			}
		}
	}
	return events
}

func fmtEvents(evs []string) string { return strings.Join(evs, ",") }

var _ = fmt.Sprint
