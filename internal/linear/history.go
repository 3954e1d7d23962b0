package linear

import (
	"cmp"
	"slices"

	"github.com/anishathalye/porcupine"

	"github.com/tierlock/tierlock/internal/exclusion"
)

// event is one operation of a history: an instant, as the record gives
// it (see the package doc: the narrowest interval the record supports).
type event struct {
	at  int64
	in  input
	out output
}

// chunk is a window of one path's operations, checked as one partition,
// and the state the path was in at its first instant.
type chunk struct {
	path   int32
	window int // 1-based, among the path's windows
	from   state
	events []event
}

// timedWrite is a write the fenced store decided, and how.
type timedWrite struct {
	exclusion.Write
	admitted bool
}

// grouped is a history ordered for reading path by path: indices of the
// holds by path and enter time, and the writes with a time by path and
// time. The holds themselves are neither copied nor reordered.
type grouped struct {
	holds   []exclusion.Hold
	byEnter []int32
	writes  []timedWrite
	untimed int // writes without a time: not checked
}

func group(h History) grouped {
	g := grouped{holds: h.Holds, byEnter: make([]int32, len(h.Holds))}
	for i := range g.byEnter {
		g.byEnter[i] = int32(i)
	}
	slices.SortStableFunc(g.byEnter, func(a, b int32) int {
		ha, hb := &h.Holds[a], &h.Holds[b]
		return cmp.Or(cmp.Compare(ha.Path, hb.Path), cmp.Compare(ha.Enter, hb.Enter))
	})
	for _, ws := range []struct {
		writes   []exclusion.Write
		admitted bool
	}{{h.Admitted, true}, {h.Refused, false}} {
		for _, w := range ws.writes {
			if w.At == 0 {
				g.untimed++
				continue
			}
			g.writes = append(g.writes, timedWrite{w, ws.admitted})
		}
	}
	slices.SortStableFunc(g.writes, func(a, b timedWrite) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.At, b.At))
	})
	return g
}

// each calls fn with the source of each path's operations, paths in
// increasing order.
func (g grouped) each(m model, fn func(path int32, src *source)) {
	holds, writes := g.byEnter, g.writes
	for len(holds) > 0 || len(writes) > 0 {
		var path int32
		switch {
		case len(holds) == 0:
			path = writes[0].Path
		case len(writes) == 0:
			path = g.holds[holds[0]].Path
		default:
			path = min(g.holds[holds[0]].Path, writes[0].Path)
		}
		i := 0
		for i < len(holds) && g.holds[holds[i]].Path == path {
			i++
		}
		j := 0
		for j < len(writes) && writes[j].Path == path {
			j++
		}
		fn(path, newSource(m, g.holds, holds[:i], writes[:j]))
		holds, writes = holds[i:], writes[j:]
	}
}

// source yields one path's operations in the order of time, from three
// sorted streams: acquires (holds by enter), releases (holds left, by
// exit) and writes. At a tie it takes an acquire first, so that a hold of
// no length is acquired before it is released.
type source struct {
	m      model
	holds  []exclusion.Hold
	acq    []int32
	rel    []int32
	writes []timedWrite
	ops    int
}

func newSource(m model, holds []exclusion.Hold, byEnter []int32, writes []timedWrite) *source {
	s := &source{m: m, holds: holds, acq: byEnter, writes: writes}
	for _, i := range byEnter {
		if holds[i].Exit != 0 { // a hold never left holds for ever: no release
			s.rel = append(s.rel, i)
		}
	}
	slices.SortStableFunc(s.rel, func(a, b int32) int { return cmp.Compare(holds[a].Exit, holds[b].Exit) })
	s.ops = len(s.acq) + len(s.rel) + len(s.writes)
	return s
}

// head is the stream the next operation comes from (0 acquires, 1
// releases, 2 writes; -1: none left) and its time.
func (s *source) head() (int, int64) {
	stream, at := -1, int64(0)
	if len(s.acq) > 0 {
		stream, at = 0, s.holds[s.acq[0]].Enter
	}
	if len(s.rel) > 0 && (stream < 0 || s.holds[s.rel[0]].Exit < at) {
		stream, at = 1, s.holds[s.rel[0]].Exit
	}
	if len(s.writes) > 0 && (stream < 0 || s.writes[0].At < at) {
		stream, at = 2, s.writes[0].At
	}
	return stream, at
}

// next takes the next operation of stream (as head gave it) at time at.
func (s *source) next(stream int, at int64) event {
	if stream == 2 {
		w := s.writes[0]
		s.writes = s.writes[1:]
		return event{at: at, in: input{kind: write, who: client{w.Proc, w.G}, token: w.Token}, out: output{admitted: w.admitted}}
	}
	var i int32
	if stream == 0 {
		i, s.acq = s.acq[0], s.acq[1:]
	} else {
		i, s.rel = s.rel[0], s.rel[1:]
	}
	h := &s.holds[i]
	in := input{kind: acquire, who: client{h.Proc, h.G}, shared: h.Shared && s.m.permits == 0, permits: 1}
	if s.m.permits > 0 {
		in.permits = max(h.Permits, 1)
	}
	if stream == 1 {
		in.kind = release
		return event{at: at, in: in}
	}
	return event{at: at, in: in, out: output{token: h.Token}}
}

// window takes the next window: n operations and the others of the last
// one's instant (a window is never cut inside an instant). Empty: none
// left.
func (s *source) window(n int) []event {
	var evs []event
	for {
		stream, at := s.head()
		if stream < 0 || len(evs) >= n && at != evs[len(evs)-1].at {
			return evs
		}
		evs = append(evs, s.next(stream, at))
	}
}

// operations is the history Porcupine checks for a call: each chunk is a
// partition of its own (part = the chunk's index in the call), opened, if
// it does not begin in the initial state, by a begin operation an instant
// before its first.
func operations(call []chunk) []porcupine.Operation {
	n := 0
	for _, c := range call {
		n += len(c.events) + 1
	}
	ops := make([]porcupine.Operation, 0, n)
	clients := map[client]int{}
	id := func(c client) int {
		i, ok := clients[c]
		if !ok {
			i = len(clients)
			clients[c] = i
		}
		return i
	}
	for i, c := range call {
		part := int32(i)
		if c.from != initial && len(c.events) > 0 {
			at := c.events[0].at - 1
			ops = append(ops, porcupine.Operation{ClientId: id(nobody), Input: begin{part: part, from: c.from},
				Call: at, Output: output{}, Return: at})
		}
		for _, e := range c.events {
			in := e.in
			in.part = part
			ops = append(ops, porcupine.Operation{ClientId: id(in.who), Input: in, Call: e.at, Output: e.out, Return: e.at})
		}
	}
	return ops
}
