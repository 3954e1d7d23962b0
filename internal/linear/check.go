package linear

import (
	"time"

	"github.com/anishathalye/porcupine"
)

// Check checks h against the model of a lock with fencing tokens that opt
// describes. It never passes what it did not decide: a call of Porcupine
// cut short by the timeout makes the verdict Unknown, and the windows
// after it are counted, not checked.
func Check(h History, opt Options) Result {
	begin := time.Now()
	c := checker{m: newModel(opt), n: opt.WindowOps, timeout: opt.Timeout, windowsOf: map[int32]int{}}
	if c.n <= 0 {
		c.n = DefaultWindowOps
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	c.res = Result{WindowOps: c.n, Timeout: c.timeout}
	g := group(h)
	c.res.Untimed = g.untimed
	g.each(c.m, c.path)
	c.flush()
	r := &c.res
	if v := r.Violation; v != nil {
		v.Windows = c.windowsOf[v.Path]
	}
	switch {
	case r.Failed > 0:
		r.Verdict = NotLinearizable
	case r.Decided < r.Windows:
		r.Verdict = Unknown
	default:
		r.Verdict = Linearizable
	}
	r.Millis = time.Since(begin).Milliseconds()
	return *r
}

// checker cuts the paths into windows and hands them to Porcupine, at
// most n operations a call (a larger window alone).
type checker struct {
	m         model
	n         int
	timeout   time.Duration // a call's
	res       Result
	windowsOf map[int32]int // windows by path
	pending   []chunk
	size      int  // operations pending
	stopped   bool // a call timed out: the rest is counted, not checked
}

// path cuts one path's operations into windows, each beginning in the
// state that applying every earlier operation in order leaves.
func (c *checker) path(path int32, src *source) {
	c.res.Paths++
	c.res.Operations += src.ops
	from, k := initial, 0
	for evs := src.window(c.n); len(evs) > 0; evs = src.window(c.n) {
		k++
		c.add(chunk{path: path, window: k, from: from, events: evs})
		for _, e := range evs {
			from = c.m.apply(from, e.in, e.out)
		}
	}
	c.windowsOf[path] = k
	c.res.Windows += k
	if k > 1 {
		c.res.Split++
	}
}

func (c *checker) add(ch chunk) {
	if len(c.pending) > 0 && c.size+len(ch.events) > c.n {
		c.flush()
	}
	c.pending = append(c.pending, ch)
	c.size += len(ch.events)
}

// flush checks the pending windows in one call; those of a call found not
// linearizable are checked again one by one, to count those that fail and
// explain the first.
func (c *checker) flush() {
	call := c.pending
	c.pending, c.size = nil, 0
	if len(call) == 0 || c.stopped {
		return
	}
	switch c.check(call) {
	case porcupine.Ok:
		c.res.Decided += len(call)
	case porcupine.Illegal:
		for _, ch := range call {
			if c.stopped {
				return
			}
			switch c.check([]chunk{ch}) {
			case porcupine.Ok:
				c.res.Decided++
			case porcupine.Illegal:
				c.res.Decided++
				c.res.Failed++
				if c.res.Violation == nil {
					c.res.Violation = explain(c.m, ch, c.timeout)
				}
			}
		}
	}
}

// check is one call of Porcupine, bounded by the timeout; a call cut short
// stops the checking.
func (c *checker) check(call []chunk) porcupine.CheckResult {
	r := porcupine.CheckOperationsTimeout(c.m.porcupine(), operations(call), c.timeout)
	if r == porcupine.Unknown {
		c.stopped = true
	}
	return r
}

// explain finds, in a chunk that is not linearizable, the first operation
// that no order could take, from the longest prefix Porcupine linearized.
func explain(m model, c chunk, timeout time.Duration) *Violation {
	v := &Violation{Path: c.path, Window: c.window, Reason: "not explained: the check timed out"}
	ops := operations([]chunk{c})
	res, info := porcupine.CheckOperationsVerbose(m.porcupine(), ops, timeout)
	if res != porcupine.Illegal || len(info.PartialLinearizations()) == 0 {
		return v
	}
	var longest []int
	for _, seq := range info.PartialLinearizations()[0] {
		if len(seq) > len(longest) {
			longest = seq
		}
	}
	s := initial
	done := make([]bool, len(ops))
	for _, id := range longest {
		s, _ = m.step(s, ops[id].Input, ops[id].Output)
		done[id] = true
		if _, ok := ops[id].Input.(begin); !ok {
			v.Linearized++
		}
	}
	culprit := firstRefused(m, s, ops, done)
	if culprit < 0 {
		return v
	}
	op := ops[culprit]
	v.Op, v.At, v.State = describe(op.Input, op.Output), op.Call, s.String()
	if _, v.Reason = m.step(s, op.Input, op.Output); v.Reason == "" {
		v.Reason = "no order of the operations of its instant fits"
	}
	return v
}

// firstRefused is the index of the first operation (ops are in the order
// of time) left out of a prefix that reached state s: of those of its
// instant, the first the model refuses in s, else the first. -1: none.
func firstRefused(m model, s state, ops []porcupine.Operation, done []bool) int {
	first := -1
	for i, op := range ops {
		if done[i] {
			continue
		}
		if first >= 0 && op.Call != ops[first].Call {
			break
		}
		if first < 0 {
			first = i
		}
		if _, why := m.step(s, op.Input, op.Output); why != "" {
			return i
		}
	}
	return first
}
