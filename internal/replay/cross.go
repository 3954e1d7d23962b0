package replay

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/tierlock/tierlock/internal/trace"
)

// The checks across processes, on the merged clock: what the model
// asserts of all of them, and the leader's order that the answers imply.

// across checks, per lock path on the merged clock, the model's mutual
// exclusion among valid holders ("assert(nvalid == 0)" as a hold becomes
// valid) and its fencing ("znode[p] > lasttok").
func (c *Checker) across() []*Violation {
	var vs []*Violation
	for _, p := range sortedKeys(c.spans) {
		ss := c.spans[p]
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].start < ss[j].start })
		var prev *span
		for _, sp := range ss {
			switch {
			case prev != nil && sp.start < prev.end:
				vs = append(vs, &Violation{File: sp.file, Step: sp.step,
					Rule: "granted while another process's hold on the path was valid (assert(nvalid == 0))", at: sp.start,
					Other: fmt.Sprintf("%s step %d", prev.file, prev.step.Seq)})
			case prev != nil && sp.token <= prev.token:
				vs = append(vs, &Violation{File: sp.file, Step: sp.step,
					Rule: fmt.Sprintf("a fencing token %d not above the previous holder's %d (znode[p] > lasttok)", sp.token, prev.token), at: sp.start,
					Other: fmt.Sprintf("%s step %d", prev.file, prev.step.Seq)})
			}
			if prev == nil || sp.end > prev.end {
				prev = sp
			}
		}
	}
	return vs
}

// creation is a create of ours answered with its node: when it was sent
// and answered (merged clock), and the node's sequence number.
type creation struct {
	sent, answered, seq int64
	file                string
	step                trace.Step
}

// created notes a create answered with node (the leader's mknode: "node
// n is the n-th created").
func (c *Checker) created(s *session, sent int64, st trace.Step) {
	seq, err := strconv.ParseInt(st.Node[len(prefixOf(st.Node)):], 10, 64)
	if err != nil {
		return
	}
	p := lockOf(st.Node)
	c.creates[p] = append(c.creates[p], creation{sent: s.global(sent), answered: s.global(st.T), seq: seq,
		file: s.file, step: st})
}

// missing notes a create answered NoNode on path p at t (merged clock):
// the lock path was missing (a container node, removed once empty), and
// the one made again numbers its children from 0.
func (c *Checker) missing(p string, t int64) { c.gone[p] = append(c.gone[p], t) }

// renumbered reports whether the path's node was made again between a and
// b: a create on it was answered NoNode in between.
func (c *Checker) renumbered(p string, a, b int64) bool {
	for _, t := range c.gone[p] {
		if t > a && t < b {
			return true
		}
	}
	return false
}

// order checks, per lock path, that a node's sequence number is its order
// of creation: a create sent after another's answer came makes a greater
// number ("nowner[nseq] = q + 1; ... nseq++"), unless the path was made
// again in between.
func (c *Checker) order() []*Violation {
	var vs []*Violation
	for _, p := range sortedKeys(c.creates) {
		cs := c.creates[p]
		byAnswer := append([]creation(nil), cs...)
		sort.Slice(byAnswer, func(i, j int) bool { return byAnswer[i].answered < byAnswer[j].answered })
		sort.Slice(cs, func(i, j int) bool { return cs[i].sent < cs[j].sent })
		k, top := 0, -1
		for _, cr := range cs {
			for k < len(byAnswer) && byAnswer[k].answered < cr.sent {
				if top < 0 || byAnswer[k].seq > byAnswer[top].seq {
					top = k
				}
				k++
			}
			if top >= 0 && cr.seq <= byAnswer[top].seq && !c.renumbered(p, byAnswer[top].answered, cr.answered) {
				prev := byAnswer[top]
				vs = append(vs, &Violation{File: cr.file, Step: cr.step, at: cr.answered,
					Rule:  fmt.Sprintf("node %d created by a create sent after node %d's was answered (nseq++: nodes are numbered in their order of creation)", cr.seq, prev.seq),
					Other: fmt.Sprintf("%s step %d", prev.file, prev.step.Seq)})
			}
		}
	}
	return vs
}
