package exclusion

import (
	"container/heap"
	"fmt"
)

// permits is how many permits h takes: Permits, or 1 when unset.
func (h Hold) permits() int {
	if h.Permits > 0 {
		return int(h.Permits)
	}
	return 1
}

// checkPermits checks the holds of one path of a semaphore of opt.Permits
// permits, sorted by enter time: at every enter, the permits of the holds
// in at that moment (entered, not yet left; intervals half-open) must not
// exceed opt.Permits (a hold whose holder saw its loss before it left is
// in until the loss: cutAtLoss). A second count, in which a lost hold
// stays in until its holder saw the loss if that came after its exit,
// finds the grants made before a loser knew (late-loss).
func checkPermits(holds []Hold, opt Options, res *Result) PathResult {
	pr := PathResult{Path: holds[0].Path, Holds: len(holds)}
	n := opt.Permits
	var in, late active // holds in, by exit; by max(exit, loss)
	for i := range holds {
		h := &holds[i]
		cutKilled(h, opt, &pr)
		loss := h.Loss
		if h.Paused {
			pr.PausedCut++
			loss = 0 // not checked: it could not be told while stopped
		}
		cutAtLoss(h, &pr)
		if loss != 0 {
			res.LossesChecked++
		}
		if h.Exit == 0 || h.Exit < h.Enter {
			lost(h, &pr, res)
			continue
		}
		in.leaveBefore(h.Enter)
		late.leaveBefore(h.Enter)
		if in.used+h.permits() > n {
			pr.Overlaps++
			var prev *Hold
			if len(in.holds) > 0 {
				prev = in.holds[0]
			}
			res.example(Violation{Kind: Overlap, Path: h.Path, Prev: prev, Hold: *h,
				Detail: fmt.Sprintf("%d of %d permits in use with this hold's %d", in.used+h.permits(), n, h.permits())})
		} else if late.used+h.permits() > n {
			pr.LateLosses++
			var prev *Hold
			for _, l := range late.holds {
				if l.Loss > h.Enter {
					prev = l
					break
				}
			}
			res.example(Violation{Kind: LateLoss, Path: h.Path, Prev: prev, Hold: *h,
				Detail: fmt.Sprintf("granted while a lost hold's holder did not know yet: %d of %d permits", late.used+h.permits(), n)})
		}
		in.enter(h, h.Exit)
		late.enter(h, max(h.Exit, loss))
	}
	return pr
}

// active is the holds in at some moment of a sweep, a min-heap on the
// moment each leaves, with the permits they take.
type active struct {
	holds []*Hold
	ends  map[*Hold]int64
	used  int
}

func (a *active) enter(h *Hold, end int64) {
	if a.ends == nil {
		a.ends = map[*Hold]int64{}
	}
	a.ends[h] = end
	a.used += h.permits()
	heap.Push(a, h)
}

// leaveBefore takes out the holds that left at or before t.
func (a *active) leaveBefore(t int64) {
	for len(a.holds) > 0 && a.ends[a.holds[0]] <= t {
		h := heap.Pop(a).(*Hold)
		a.used -= h.permits()
		delete(a.ends, h)
	}
}

// heap.Interface; not for other use.

func (a *active) Len() int           { return len(a.holds) }
func (a *active) Less(i, j int) bool { return a.ends[a.holds[i]] < a.ends[a.holds[j]] }
func (a *active) Swap(i, j int)      { a.holds[i], a.holds[j] = a.holds[j], a.holds[i] }
func (a *active) Push(x any)         { a.holds = append(a.holds, x.(*Hold)) }
func (a *active) Pop() any {
	h := a.holds[len(a.holds)-1]
	a.holds = a.holds[:len(a.holds)-1]
	return h
}
