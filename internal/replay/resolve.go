package replay

import (
	"slices"

	"github.com/tierlock/tierlock/internal/trace"
)

// Which lock a step is of. A process may have several Locks on one path
// (two tier.Locks of the session on the same path, as stress's flood
// makes): the model's processes, one lock each, on one session. A step
// names its lock path, not the Lock; these find the instance by what the
// step carries: its node, its create's prefix, or the gate's state.

// at notes l as the lock the step under way concerns (its state is the
// one counted) and returns it.
func (s *session) at(l *lock) *lock {
	s.touched = l
	return l
}

// instances returns the locks of the session on path p.
func (s *session) instances(p string) []*lock { return s.locks[p] }

// newLock adds an instance on path p.
func (s *session) newLock(p string) *lock {
	l := &lock{s: s, path: p, mine: map[string]bool{}}
	s.locks[p] = append(s.locks[p], l)
	return l
}

// first returns the first instance on p, made if there is none.
func (s *session) first(p string) *lock {
	if ls := s.locks[p]; len(ls) > 0 {
		return ls[0]
	}
	return s.newLock(p)
}

// byNode is the instance whose node (or one of whose nodes) is node.
func (s *session) byNode(node string) *lock {
	p := lockOf(node)
	for _, l := range s.locks[p] {
		if l.node == node || l.mine[node] {
			return l
		}
	}
	return s.first(p)
}

// byPrefix is the instance whose create (the last it sent) is of prefix,
// or nil.
func (s *session) byPrefix(prefix string) *lock {
	for _, l := range s.locks[lockOf(prefix)] {
		if l.prefix == prefix {
			return l
		}
	}
	return nil
}

// forTurn is the instance a turn on node is of: its node, or the one
// whose create's prefix the node carries (protection mode found it).
func (s *session) forTurn(node string) *lock {
	p := lockOf(node)
	for _, l := range s.locks[p] {
		if l.node == node {
			return l
		}
	}
	for _, l := range s.locks[p] {
		if l.prefix == prefixOf(node) {
			return l
		}
	}
	return s.first(p)
}

// forGateEnter is the instance whose gate a goroutine enters: one whose
// gate is free or was passed; else, while a holder keeps a node, the
// entry may be a pass whose gate_pass is not recorded yet or another Lock
// on the path: a new instance, marked maybePass, which a hand-off (or the
// gate_pass) folds into the holder's.
func (s *session) forGateEnter(p string) *lock {
	for _, l := range s.locks[p] {
		if !l.gate || l.passed {
			return l
		}
	}
	if len(s.locks[p]) == 0 {
		return s.newLock(p)
	}
	l := s.newLock(p)
	l.maybePass = true
	return l
}

// forPass is the instance a gate_pass or hand-off on p concerns: the
// holder of node when known, else one that keeps a node. A maybePass
// instance on the path was the pass's receiver: it goes.
func (s *session) forPass(p, node string) *lock {
	var giver *lock
	for _, l := range s.locks[p] {
		if l.zkHeld && !l.maybePass && (node == "" || l.node == node) {
			giver = l
			break
		}
	}
	if giver == nil {
		return s.first(p)
	}
	if i := slices.IndexFunc(s.locks[p], func(l *lock) bool { return l.maybePass }); i >= 0 {
		s.locks[p] = slices.Delete(s.locks[p], i, i+1)
		giver.passOwed++ // its receiver entered: the gate_enter is the pass's
	}
	return giver
}

// forCreate is the instance a create on prefix is of: the one that sent
// it before (a retry, protection mode), else a gate holder with no node,
// else (zklock alone, no gate) one with no node, else a new one; never
// one whose creates carry another marker (the other Lock of a read/write
// lock on the path).
func (s *session) forCreate(prefix string) *lock {
	p := lockOf(prefix)
	for _, l := range s.locks[p] {
		if l.prefix == prefix {
			return l
		}
	}
	for _, l := range s.locks[p] {
		if l.gate && l.zst == idle && !l.zkHeld && sameMarker(l, prefix) {
			l.maybePass = false // it acquires: not a pass's receiver
			return l
		}
	}
	for _, l := range s.locks[p] {
		if !l.gated && l.zst == idle && !l.zkHeld && sameMarker(l, prefix) {
			return l
		}
	}
	return s.newLock(p)
}

// forLeave is the instance whose gate is given back: one past its gate
// whose acquisition just ended (released, or its wait given up and its
// node's delete queued), else one with nothing under way (a goroutine
// that entered and leaves at once: a closed Lock, a try), else one that
// owes a pass, else one whose acquisition is abandoned (a create in
// flight when its wait ended). Ended first: with two Locks of the session
// on the path (stress's close fault remakes them), a goroutine entering
// the new one's gate while the old one's acquisition ends must not take
// that acquisition's leave.
func (s *session) forLeave(p string) *lock {
	for _, ok := range []func(*lock) bool{
		func(l *lock) bool { return l.ended && l.zst == idle && !l.zkHeld },
		func(l *lock) bool { return l.zst == idle && !l.zkHeld },
		func(l *lock) bool { return l.passOwed > 0 },
		func(l *lock) bool { return !l.zkHeld },
	} {
		for _, l := range s.locks[p] {
			if l.gate && ok(l) {
				return l
			}
		}
	}
	return s.first(p)
}

// forGetW is the waiting instance on the path of the predecessor node.
func (s *session) forGetW(pred string) *lock {
	p := lockOf(pred)
	for _, l := range s.locks[p] {
		if l.zst == queued {
			return l
		}
	}
	return s.first(p)
}

// listed gives a listing's answer on p to the instances that may read it.
func (s *session) listed(p string) {
	if len(s.locks[p]) == 0 {
		s.newLock(p)
	}
	for _, l := range s.locks[p] {
		l.lists++ // rl[p]: the listing's answer, which a turn reads
	}
}

// forDelAdd is the instance whose node's delete is queued.
func (s *session) forDelAdd(st trace.Step) *lock { return s.byNode(st.Node) }

// all calls fn for every lock of the session.
func (s *session) all(fn func(*lock)) {
	for _, p := range sortedKeys(s.locks) {
		for _, l := range s.locks[p] {
			fn(l)
		}
	}
}
