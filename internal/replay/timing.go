package replay

import (
	"fmt"
	"time"

	"github.com/tierlock/tierlock/internal/trace"
)

// The model's timing. twotier.pml takes in one atomic step what the code
// records as two: disconnect(q) and lapse(p) end the holds and tell them
// lost ("losehold(q)", "hlost[q] = 1") in the step that ends them; lead's
// grantNow makes the hold in the step of its verdict; and lapse(p) comes
// when the lease's deadline passes (its time is what lease.go argues). The
// code needs some time to run the second of two such steps, never a lapse
// of time: a step that follows the one the model takes it with later than
// that is refused, even though it comes.
//
// The time allowed, tol, is T/16 of the session timeout the server granted:
// 125 ms with T = 2 s. The lease argues a margin of T/8 between a holder's
// deadline (R = 7T/8 past a touch at the leader) and the earliest expiry of
// its session (T past it; zklock/internal/session/lease.go); a loss told
// later than T/16 after its cause, or a lapse later than T/16 after the
// deadline, spends half of it, which no scheduling delay of a loaded
// machine comes near:
// make test's recorded runs and a stress run with every fault took at most
// 5 ms (docs/replay.md), and a seeded bug 200 ms late is refused. The
// rules:
//
//   - a loss follows the disconnection, expiry, new session or lapse that
//     ended its hold by at most tol;
//   - while the session has valid holds, no step comes later than tol after
//     the lease's deadline (the code's, which the replay checked against
//     its own) unless the lapse came first;
//   - a grant follows its verdict "now" by at most tol, and a verdict "now"
//     comes no later than tol after the lease's deadline.
//
// A process stopped by the OS (stress's pause fault: SIGSTOP) cannot keep
// any of these: a step late only by such a stop is excused when whoever
// stopped the process recorded it (a pause step: trace.Paused) and the
// step came within tol of the process going on. The checks across
// processes already end a stopped holder's hold at its deadline; the
// fencing token is what protects a paused holder (DESIGN.md).

// tol is how much later than the model's step the code's may come: T/16
// of the session's current timeout (0 before any handshake: no lease, so
// no hold, can exist then).
func (s *session) tol() int64 { return s.timeout / 16 }

// late is a step that came later than the model takes it, kept until the
// pauses of every process are known (Checker.Result).
type late struct {
	v        *Violation
	pid      int
	due, tol int64 // merged clock: when the step was due, and its tolerance
}

// pause is an interval (merged clock) in which process pid was stopped.
type pause struct {
	pid      int
	from, to int64
}

// tooLate records st, due at due (this file's clock) and come later than
// tol after it, as a violation unless a pause of its process excuses it.
// The step is applied all the same: the model takes it, only sooner.
func (s *session) tooLate(st trace.Step, due int64, rule string) {
	v := &Violation{File: s.file, Step: st, State: s.stateAt(st), at: s.global(st.T),
		Rule: fmt.Sprintf("%s (%s after it, where the code may take %s: T/16 of the session timeout the server granted)",
			rule, dur(st.T-due), dur(s.tol()))}
	s.c.lates = append(s.c.lates, late{v: v, pid: st.Pid, due: s.global(due), tol: s.tol()})
}

// excused reports whether a pause of l's process covers its lateness: the
// process was stopped before the step was overdue, and the step came
// within tol of its going on.
func (c *Checker) excused(l late) bool {
	for _, p := range c.pauses {
		if p.pid == l.pid && p.from <= l.due+l.tol && l.v.at <= p.to+l.tol {
			return true
		}
	}
	return false
}

// The rules, for Result.Slowest.
const (
	ruleLoss    = iota // a loss after the step that ended its hold
	ruleLapse          // a lapse after the lease's deadline, with holds valid
	ruleGrant          // a grant after its verdict now
	ruleVerdict        // a verdict now after the lease's deadline
	rules
)

// ruleNames name the rules, as a summary words them.
var ruleNames = [rules]string{"a loss after its cause", "a lapse after the deadline", "a grant after its verdict",
	"a verdict after the deadline"}

// check holds st, due at due, to the tolerance: a step later than that is
// late (tooLate), one within it is counted in Result.Slowest.
func (s *session) check(r int, st trace.Step, due int64, rule string) {
	d := st.T - due
	switch {
	case s.timeout == 0 || d <= 0:
	case d > s.tol():
		s.tooLate(st, due, rule)
	default:
		s.c.res.Slowest[r] = max(s.c.res.Slowest[r], time.Duration(d))
	}
}

// onTime checks, before st, that the lease's deadline has not passed by
// more than tol while holds of the session are valid and no lapse ended
// them (lapse(p) is enabled at the deadline). The wire's steps are not the
// client's: they witness nothing; a lapse is checked as it is applied.
func (s *session) onTime(st trace.Step) {
	switch st.Kind {
	case trace.Write, trace.Handshake, trace.Touch, trace.Pause, trace.Lapse:
		return
	}
	if s.lease && s.valid > 0 && s.timeout > 0 && st.T > s.deadline+s.tol() && s.overdue != s.deadline {
		s.overdue = s.deadline // once per deadline: every later step is as late
		s.tooLate(st, s.deadline, fmt.Sprintf("a step with %d hold(s) valid past the lease's deadline and no lapse "+
			"(lapse(p) ends them at the deadline)", s.valid))
	}
}

// lapseOnTime checks a lapse that ends valid holds against the deadline
// that passed.
func (s *session) lapseOnTime(st trace.Step) {
	if s.lease && s.valid > 0 && s.overdue != s.deadline {
		s.check(ruleLapse, st, s.deadline, fmt.Sprintf("a lapse ending %d valid hold(s) after the lease's deadline "+
			"(lapse(p) is enabled at the deadline)", s.valid))
	}
}

// lossOnTime checks that a loss follows the step that ended its hold
// (losehold is in that step).
func (s *session) lossOnTime(st trace.Step, cause *trace.Step) {
	s.check(ruleLoss, st, cause.T, fmt.Sprintf("a hold told lost after the %s that ended it (step %d; losehold is "+
		"in that step)", causeName(cause), cause.Seq))
}

// causeName names the step that ended holds.
func causeName(st *trace.Step) string {
	switch st.Kind {
	case trace.Lapse:
		return "lapse"
	case trace.Event:
		return "event " + st.Note
	}
	return "new session's first step"
}

// verdictOnTime checks a verdict "now": before the lease's deadline
// (grantNow: "lease[p]", the deadline ahead).
func (s *session) verdictOnTime(st trace.Step) {
	s.check(ruleVerdict, st, s.deadline, "a grant's verdict now after the lease's deadline (grantNow: lease[p], "+
		"the deadline ahead)")
}

// grantOnTime checks a grant against its verdict "now", judged at v
// (grantNow makes the hold in that step).
func (s *session) grantOnTime(st trace.Step, v int64) {
	s.check(ruleGrant, st, v, "a grant after its verdict now (grantNow makes the hold in that step)")
}

// lateSteps returns the first late step of each process that no pause
// excuses, and counts the excused ones in r.
func (c *Checker) lateSteps(r *Result) []*Violation {
	var vs []*Violation
	seen := map[[3]any]bool{}
	for _, l := range c.lates {
		if c.excused(l) {
			r.Paused++
			continue
		}
		k := [3]any{l.v.File, l.v.Step.Pid, l.v.Step.Proc}
		if !seen[k] {
			seen[k] = true
			vs = append(vs, l.v)
		}
	}
	return vs
}
