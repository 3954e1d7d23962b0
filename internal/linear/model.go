package linear

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// kind is what an operation does.
type kind uint8

const (
	acquire kind = iota // a hold begins: its lock was granted
	release             // a hold ends
	write               // a write reached the fenced store
)

// client is a holder: goroutine g of process proc.
type client struct{ proc, g int32 }

// nobody holds the lock exclusively.
var nobody = client{-1, -1}

func (c client) String() string {
	if c == nobody {
		return "nobody"
	}
	return fmt.Sprintf("proc %d goroutine %d", c.proc, c.g)
}

// input is an operation's argument. part is the partition it belongs to
// (a window of a path's operations); the model ignores it.
type input struct {
	kind    kind
	who     client
	shared  bool  // a read hold of a read/write lock
	permits int32 // a semaphore hold's permits (at least 1)
	token   int64 // write: the token the write carries
	part    int32
}

// begin is the operation that opens a window not at the start of its
// path's history: it sets the state the window begins in.
type begin struct {
	part int32
	from state
}

// output is an operation's result: an acquisition's token (0: unknown),
// whether the store admitted a write.
type output struct {
	token    int64
	admitted bool
}

// state is the lock's and its fenced store's, on one path.
type state struct {
	holder    client // the exclusive holder, or nobody
	readers   int32  // read holds in
	used      int32  // a semaphore's permits in use
	token     int64  // the highest token granted to an exclusive hold (0: none yet)
	tokenProc int32  // the process it was granted to
	high      int64  // the highest token the fenced store admitted (0: none)
}

// initial is the state of a path before its first operation.
var initial = state{holder: nobody, tokenProc: -1}

func (s state) String() string {
	out := "free"
	switch {
	case s.holder != nobody:
		out = "held by " + s.holder.String()
	case s.readers > 0:
		out = fmt.Sprintf("%d reader(s) in", s.readers)
	case s.used > 0:
		out = fmt.Sprintf("%d permit(s) in use", s.used)
	}
	if s.token != 0 {
		out += fmt.Sprintf(", last token %d (proc %d)", s.token, s.tokenProc)
	}
	if s.high != 0 {
		out += fmt.Sprintf(", store at token %d", s.high)
	}
	return out
}

// model is the sequential specification of a lock with fencing tokens, as
// Options describe the lock under test.
type model struct {
	tokens  bool  // check tokens
	handoff bool  // consecutive holds of one process may share a token
	permits int32 // a semaphore of this many permits; 0: a mutex or read/write lock
}

func newModel(opt Options) model {
	m := model{tokens: opt.Tokens, handoff: opt.SameNodeHandoff, permits: int32(max(opt.Permits, 0))}
	if m.permits > 0 {
		m.tokens = false // leases are held side by side: their tokens are not ordered
	}
	return m
}

// porcupine is the model as Porcupine takes it, partitioned by input.part.
func (m model) porcupine() porcupine.Model {
	return porcupine.Model{
		Partition: partition,
		Init:      func() any { return initial },
		Step: func(s, in, out any) (bool, any) {
			next, why := m.step(s.(state), in, out)
			return why == "", next
		},
		Hash: func(s any) uint64 {
			st := s.(state)
			h := uint64(st.token)*0x9e3779b97f4a7c15 ^ uint64(st.high)*0xc2b2ae3d27d4eb4f
			return h ^ uint64(st.holder.proc)<<40 ^ uint64(st.holder.g)<<20 ^ uint64(st.readers)<<8 ^ uint64(st.used)
		},
		DescribeOperation: describe,
		DescribeState:     func(s any) string { return s.(state).String() },
	}
}

// step is the state after an operation (in: an input or a begin, out an
// output), and why the model cannot take it from s ("": it can).
func (m model) step(s state, in, out any) (state, string) {
	if b, ok := in.(begin); ok {
		return b.from, ""
	}
	i, o := in.(input), out.(output)
	if why := m.refuse(s, i, o); why != "" {
		return s, why
	}
	return m.apply(s, i, o), ""
}

// partition splits a history by the part of its inputs, in order of first
// appearance.
func partition(history []porcupine.Operation) [][]porcupine.Operation {
	index := map[int32]int{}
	var parts [][]porcupine.Operation
	for _, op := range history {
		var p int32
		switch in := op.Input.(type) {
		case input:
			p = in.part
		case begin:
			p = in.part
		}
		i, ok := index[p]
		if !ok {
			i = len(parts)
			index[p] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], op)
	}
	return parts
}

// refuse says why the model cannot take the step from s, or "" if it can.
func (m model) refuse(s state, in input, out output) string {
	switch in.kind {
	case acquire:
		return m.refuseAcquire(s, in, out.token)
	case release:
		return m.refuseRelease(s, in)
	case write:
		return refuseWrite(s, in, out.admitted)
	}
	return ""
}

func (m model) refuseAcquire(s state, in input, token int64) string {
	switch {
	case m.permits > 0:
		if s.used+in.permits > m.permits {
			return fmt.Sprintf("%d of %d permits in use, %d more asked", s.used, m.permits, in.permits)
		}
		return ""
	case s.holder != nobody:
		return "held by " + s.holder.String()
	case in.shared:
		return ""
	case s.readers > 0:
		return fmt.Sprintf("%d reader(s) in", s.readers)
	}
	if !m.tokens || token == 0 || s.token == 0 {
		return ""
	}
	switch {
	case token < s.token:
		return fmt.Sprintf("token %d below the last one granted, %d (proc %d)", token, s.token, s.tokenProc)
	case token == s.token && !(m.handoff && in.who.proc == s.tokenProc):
		return fmt.Sprintf("token %d granted again (last to proc %d)", token, s.tokenProc)
	}
	return ""
}

func (m model) refuseRelease(s state, in input) string {
	switch {
	case m.permits > 0:
		if s.used < in.permits {
			return fmt.Sprintf("%d permit(s) returned, %d in use", in.permits, s.used)
		}
	case in.shared:
		if s.readers == 0 {
			return "no reader in"
		}
	case s.holder != in.who:
		return "released while held by " + s.holder.String()
	}
	return ""
}

func refuseWrite(s state, in input, admitted bool) string {
	switch {
	case admitted && in.token < s.high:
		return fmt.Sprintf("the store admitted token %d after token %d", in.token, s.high)
	case !admitted && in.token >= s.high:
		return fmt.Sprintf("the store refused token %d, not below its highest, %d", in.token, s.high)
	}
	return ""
}

// apply is the state after the step, its legality aside: applying a
// path's operations in the order of time leaves the state the next window
// begins in.
func (m model) apply(s state, in input, out output) state {
	if in.kind == write {
		if out.admitted {
			s.high = max(s.high, in.token)
		}
		return s
	}
	delta := int32(1)
	if in.kind == release {
		delta = -1
	}
	switch {
	case m.permits > 0:
		s.used += delta * in.permits
	case in.shared:
		s.readers += delta
	case in.kind == release:
		if s.holder == in.who {
			s.holder = nobody
		}
	default:
		s.holder = in.who
		// The highest token: the last one, in a legal step; in a window's
		// starting state, the same whatever the order of an instant.
		if m.tokens && out.token != 0 && out.token >= s.token {
			s.token, s.tokenProc = out.token, in.who.proc
		}
	}
	return s
}

// describe says what an operation did.
func describe(op, result any) string {
	if b, ok := op.(begin); ok {
		return "window begins: " + b.from.String()
	}
	in, out := op.(input), result.(output)
	what := ""
	switch {
	case in.shared:
		what = " (read)"
	case in.permits > 1:
		what = fmt.Sprintf(" (%d permits)", in.permits)
	}
	switch in.kind {
	case acquire:
		if out.token != 0 {
			return fmt.Sprintf("%s acquires%s with token %d", in.who, what, out.token)
		}
		return fmt.Sprintf("%s acquires%s", in.who, what)
	case release:
		return fmt.Sprintf("%s releases%s", in.who, what)
	case write:
		verdict := "refused"
		if out.admitted {
			verdict = "admitted"
		}
		return fmt.Sprintf("%s writes with token %d (%s)", in.who, in.token, verdict)
	}
	return "?"
}
