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
// valid) and its fencing ("znode[p] > lasttok"), for the recipes whose
// holds exclude each other (recipe.go). A hold of an expiry-only session
// may still be valid, by its lease, up to its slack after another
// process's grant (policy.go): such a grant is counted, not refused.
func (c *Checker) across() (vs []*Violation, within int) {
	for _, p := range sortedKeys(c.spans) {
		ss := c.spans[p]
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].start < ss[j].start })
		last := map[int64]map[int]*span{} // by session, by recipe: the hold that ends last
		var topAll, topX *span            // the highest token so far: any hold, exclusive holds
		for _, sp := range ss {
			if sp.kind == lease {
				continue // the semaphore's n is not recorded (recipe.go)
			}
			if v := overlap(sp, last, &within); v != nil {
				vs = append(vs, v)
			}
			top := topX // a reader's token is above every earlier writer's
			if sp.kind == exclusive {
				top = topAll // a writer's, above every earlier hold's
			}
			if v := fenced(sp, top); v != nil {
				vs = append(vs, v)
			}
			topAll = higher(topAll, sp)
			if sp.kind == exclusive {
				topX = higher(topX, sp)
			}
			if last[sp.owner] == nil {
				last[sp.owner] = map[int]*span{}
			}
			if l := last[sp.owner][sp.kind]; l == nil || sp.end > l.end {
				last[sp.owner][sp.kind] = sp
			}
		}
	}
	return vs, within
}

// fenced checks sp's token against top's, the highest of the earlier
// holds it must exceed ("znode[p] > lasttok").
func fenced(sp, top *span) *Violation {
	if top == nil || sp.token > top.token {
		return nil
	}
	return &Violation{File: sp.file, Step: sp.step, at: sp.start,
		Rule:  fmt.Sprintf("a fencing token %d not above the previous holder's %d (znode[p] > lasttok)", sp.token, top.token),
		Other: fmt.Sprintf("%s step %d", top.file, top.step.Seq)}
}

// higher is whichever of a and b has the higher token (a when b's is not).
func higher(a, b *span) *span {
	if a == nil || b.token > a.token {
		return b
	}
	return a
}

// overlap finds a hold still valid at sp's grant that sp's recipe
// excludes: of another session, or of sp's own when readers are involved
// (recipe.go's conflicts). Holds that ended before sp began are dropped
// from last, which keeps it small.
func overlap(sp *span, last map[int64]map[int]*span, within *int) *Violation {
	var v *Violation
	for _, owner := range sortedInts(last) {
		for _, kind := range []int{exclusive, reader} {
			o := last[owner][kind]
			switch {
			case o == nil:
				continue
			case o.end <= sp.start:
				delete(last[owner], kind)
				continue
			case !conflicts(sp.kind, o.kind, owner == sp.owner) || v != nil:
				continue
			case sp.start >= o.end-o.slack:
				*within++ // within the expiry-only policy's bound (policy.go)
				continue
			}
			v = &Violation{File: sp.file, Step: sp.step, at: sp.start,
				Rule:  "granted while another process's hold on the path was valid (assert(nvalid == 0))",
				Other: fmt.Sprintf("%s step %d", o.file, o.step.Seq)}
		}
	}
	return v
}

func sortedInts[V any](m map[int64]V) []int64 {
	ks := make([]int64, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
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
