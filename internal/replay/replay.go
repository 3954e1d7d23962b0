package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tierlock/tierlock/internal/trace"
)

// Checker replays traces, file by file, each process through its own
// state machine, and then checks the holds of all of them together.
type Checker struct {
	spans   map[string][]*span    // valid holds by lock path, of every process
	creates map[string][]creation // nodes created, by lock path
	gone    map[string][]int64    // when a create found its lock path missing, by path
	states  map[string]struct{}
	lates   []late  // steps later than the model takes them, until the pauses are known (timing.go)
	pauses  []pause // processes stopped, as whoever stopped them recorded it
	res     Result
}

// Result is what a replay found.
type Result struct {
	Traces int           // files replayed
	Steps  int           // steps replayed
	States int           // distinct per-process model states visited
	Holds  int           // grants replayed
	Took   time.Duration // time taken
	// What the model does not have (policy.go, recipe.go), counted so that
	// a summary says so: sessions under WithLossOnExpiryOnly, checked by
	// that policy's rendering; grants of another process within such a
	// session's bounded overlap; read and lease holds, and turns of read
	// and lease nodes, whose recipe's rule is not checked.
	ExpiryOnly, Overlaps  int
	ReadHolds, LeaseHolds int
	RecipeTurns           int
	// Paused counts steps later than the model takes them whose process
	// was stopped (SIGSTOP) meanwhile, as whoever stopped it recorded
	// (timing.go): excused.
	Paused int
	// LateWatches counts watch requests recorded after the wait that
	// launched them ended (lock.endWait): the model's send, made late.
	LateWatches int
	// Renews counts the lease's renewals accepted, by what showed their
	// touch at the leader (bounds.go): a handshake, a chain.
	Renews struct{ Handshake, Chain int }
	// Slowest is, for each timing rule (timing.go), the longest a step
	// accepted took after the step the model takes it with.
	Slowest [rules]time.Duration
	// Violations are the steps refused, at most one per process (its state
	// after a refused step is not the model's), the first step of each
	// process later than the model takes it that no pause excuses (the
	// process goes on: the model takes the step, only sooner), then those
	// of the checks across processes; First is the earliest of all, on the
	// merged clock.
	Violations []*Violation
}

// First returns the earliest violation, or nil when the replay passed.
func (r Result) First() *Violation {
	if len(r.Violations) == 0 {
		return nil
	}
	return r.Violations[0]
}

// Timing words the slowest step accepted by each timing rule, or "" when
// none was timed.
func (r Result) Timing() string {
	var parts []string
	for i, d := range r.Slowest {
		if d > 0 {
			parts = append(parts, fmt.Sprintf("%s %v", ruleNames[i], d.Round(time.Microsecond)))
		}
	}
	return strings.Join(parts, ", ")
}

// Outside words what the replay met that twotier.pml does not have, and
// how it was checked, or "" when nothing.
func (r Result) Outside() string {
	var parts []string
	if r.ExpiryOnly > 0 {
		parts = append(parts, fmt.Sprintf("%d expiry-only session(s), replayed by that policy's rendering, "+
			"%d grant(s) within its T/8 overlap", r.ExpiryOnly, r.Overlaps))
	}
	if r.LateWatches > 0 {
		parts = append(parts, fmt.Sprintf("%d watch request(s) made after the wait that launched them ended", r.LateWatches))
	}
	if r.Paused > 0 {
		parts = append(parts, fmt.Sprintf("%d step(s) late only by a stop of their process (SIGSTOP), excused", r.Paused))
	}
	if r.ReadHolds+r.LeaseHolds+r.RecipeTurns > 0 {
		parts = append(parts, fmt.Sprintf("%d read and %d lease hold(s), %d turn(s) of read or lease nodes "+
			"whose recipe rule is not checked (reads: exclusion from writers only; leases: no exclusion nor token check)",
			r.ReadHolds, r.LeaseHolds, r.RecipeTurns))
	}
	return strings.Join(parts, "; ")
}

// span is one valid hold: from its grant until its release, its loss, or
// the lapse, disconnection or new session that ended it (merged clock).
type span struct {
	start, end int64
	token      int64
	owner      int64 // the session holding it
	kind       int   // its recipe (recipe.go)
	slack      int64 // how long before end another process may be granted (policy.go)
	file       string
	step       trace.Step
}

// New returns a checker with nothing replayed.
func New() *Checker {
	return &Checker{spans: map[string][]*span{}, creates: map[string][]creation{}, gone: map[string][]int64{}, states: map[string]struct{}{}}
}

// openSpan starts the span of a hold granted at st.
func (c *Checker) openSpan(s *session, path string, st trace.Step) *span {
	sp := &span{start: s.global(st.T), end: math.MaxInt64, token: st.Zxid, owner: st.Owner, kind: recipeOf(st.Node),
		slack: s.slack(), file: s.file, step: st}
	c.spans[path] = append(c.spans[path], sp)
	s.valid++
	c.res.Holds++
	switch sp.kind {
	case reader:
		c.res.ReadHolds++
	case lease:
		c.res.LeaseHolds++
	}
	return sp
}

// ReplayFile replays one trace file.
func (c *Checker) ReplayFile(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return c.Replay(name, f)
}

// Replay replays the steps read from r, one JSON object a line, as the
// trace named name. A step the model does not allow is recorded as a
// violation (the rest of that process's steps are not judged); a step it
// allows but later than it takes it is kept until Result, which knows the
// pauses of every file (timing.go). An error is returned only when r
// cannot be read.
func (c *Checker) Replay(name string, r io.Reader) error {
	start := time.Now()
	defer func() { c.res.Took += time.Since(start) }()
	c.res.Traces++
	procs := map[[2]int]*session{}
	dead := map[[2]int]bool{}
	var wall int64
	dec := json.NewDecoder(r)
	for {
		var st trace.Step
		if err := dec.Decode(&st); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("replay: %s: %w", name, err)
		}
		if st.Wall != 0 {
			wall = st.Wall
		}
		if st.Kind == trace.Pause { // the environment's step: another process stopped (timing.go)
			c.pauses = append(c.pauses, pause{pid: st.N, from: wall + st.At, to: wall + st.Until})
			continue
		}
		k := [2]int{st.Pid, st.Proc}
		if st.Proc == 0 || dead[k] {
			continue // no session yet (an event before Connect returned), or refused already
		}
		s := procs[k]
		if s == nil {
			s = newSession(c, name)
			procs[k] = s
		}
		s.wall = wall
		c.res.Steps++
		before := ""
		if err := s.step(st); err != nil {
			before = s.stateAt(st)
			c.res.Violations = append(c.res.Violations, &Violation{File: name, Step: st, Rule: err.Error(), State: before,
				at: s.global(st.T)})
			dead[k] = true
			continue
		}
		c.states[s.key()] = struct{}{}
	}
	for k, s := range procs {
		if dead[k] {
			continue
		}
		if st := s.finish(); st != nil {
			c.res.Violations = append(c.res.Violations, &Violation{File: name, Step: *st, State: s.stateAt(*st), at: s.global(st.T),
				Rule: "a hold ended by this step was never told lost (losehold: hlost[q] = 1 in the same step)"})
		}
		end := s.last
		if s.lease && s.deadline > end {
			end = s.deadline // a trace that stops while holding: valid until the lease's deadline
		}
		s.all(func(l *lock) { l.endSpan(s.global(end)) })
	}
	return nil
}

// ReplayDir replays every trace-*.jsonl file of dir.
func (c *Checker) ReplayDir(dir string) error {
	names, err := filepath.Glob(filepath.Join(dir, "trace-*.jsonl"))
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return fmt.Errorf("replay: no trace-*.jsonl in %s", dir)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := c.ReplayFile(n); err != nil {
			return err
		}
	}
	return nil
}

// Result checks the holds of all the processes replayed so far together
// and returns what the replay found.
func (c *Checker) Result() Result {
	start := time.Now()
	r := c.res
	r.Violations = append([]*Violation(nil), c.res.Violations...)
	r.Violations = append(r.Violations, c.lateSteps(&r)...)
	vs, within := c.across()
	r.Violations = append(r.Violations, vs...)
	r.Overlaps = within
	r.Violations = append(r.Violations, c.order()...)
	r.States = len(c.states)
	r.Took += time.Since(start)
	sort.SliceStable(r.Violations, func(i, j int) bool { return r.Violations[i].at < r.Violations[j].at })
	return r
}

// key is the model state of the session and of the lock the last step
// concerned (a process of the model has one lock), node names and ids
// left out so that states repeat as the model's do.
func (s *session) key() string {
	b := fmt.Sprintf("%v%v%v%v%v", s.conn, s.lease, len(s.owed) > 0, len(s.dels) > 0, len(s.taken) > 0)
	if l := s.touched; l != nil {
		b += fmt.Sprintf("|%v%d%v%d%v%v%v%v%v", l.gate, l.passOwed, l.passed, l.zst, l.zkHeld, l.hlost,
			l.stale != "", l.unknown, l.lists > 0)
	}
	return b
}
