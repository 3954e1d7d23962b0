// Package exclusion is the independent checker of mutual exclusion that
// the stress command, the tier tests and anything else that runs a lock
// from many goroutines or processes share. It knows nothing about how
// locks are implemented: it takes the critical sections that holders
// recorded (enter and exit times on one clock, fencing token, process,
// goroutine, lock path) and tells, per lock path, whether mutual exclusion
// held.
//
// Holds reach it in one of three ways:
//
//   - [Log]: the holders are goroutines of this process; each calls
//     [Log.Enter] after its lock said it holds and [Entry.Exit] before it
//     releases. The log stamps both on [Now], in the order of its calls.
//   - [Journal]: the holders are processes that append one line per event
//     to one file opened with O_APPEND; the kernel orders the appends, and
//     [ReadJournal] turns the file into holds on a logical clock (the line
//     number), which is all an order needs.
//   - Hand-made [Hold] values, such as the stress command's, read from the
//     memory-mapped record files of its workers with times taken from [Now].
//
// [Check] then counts four kinds of violation:
//
//   - overlap: two holds of one path whose intervals [enter, exit)
//     intersect. Intervals are half-open, so a hold may begin at the very
//     nanosecond the previous one ended. A hold whose holder saw it lost
//     before it left (Hold.Loss < Exit) ends at the loss: from then on its
//     holder knows, and a grant after it is what loss before grant allows
//     (its writes are the fencing token's to refuse, CheckWrites). Such a
//     hold is cut there (Told), and a grant before the loss stays an
//     overlap and a late loss.
//   - token: in the order of enter times, a fencing token lower than the
//     one before it, or equal to it across different processes. Equal
//     tokens are allowed only for consecutive holds of one process, and only
//     when the lock hands the hold from goroutine to goroutine inside the
//     process (Options.SameNodeHandoff); otherwise every hold must carry a
//     higher token than the one before.
//   - lost: a hold entered and never left (its holder died, or the record
//     is corrupt: an exit before the enter counts here too).
//   - late-loss: loss before grant broken. A hold its holder saw lost (its
//     held context cancelled by a loss, at Hold.Loss) must have been told so
//     before any other process was granted the path: the next hold of
//     another process, in the order of enter times, must enter after the
//     loss. The loss time is taken when the holder's goroutine saw it, after
//     the cancellation, so the check errs towards reporting.
//
// A process killed on purpose (SIGKILL, to test that a dead holder's lock
// passes on only after its session ends) leaves the hold it was in without
// an exit. Given the kill times (Options.Killed), such a hold is cut: it is
// taken to last until its process was known dead, counted apart (Cut), and
// checked like any other hold, so that another process entering before the
// kill is still an overlap.
//
// A process paused (SIGSTOP, a VM freeze, a long collection) for longer
// than its session outlives its holds without knowing: the server ends
// them and grants the lock to another process while the paused one still
// believes it holds, and goes on believing for a moment after it wakes.
// That is not a fault of the lock, and no lock can avoid it: the fencing
// token is the answer (see CheckWrites). Given the pauses
// (Options.Paused), a hold of the paused process in progress when it was
// stopped is cut at the stop (Paused), counted apart and checked like any
// other hold up to that moment, so that another process entering before
// the stop is still an overlap; the loss its holder saw on waking is not
// checked against the grants made meanwhile (it could not have been told
// sooner: it was not running). A hold the process was granted before the
// stop but entered only after waking is recognised by its token, lower
// than a token granted to another process since the stop (tokens of a
// path grow with the queue's order, and whoever was granted during the
// pause queued behind it), and is cut at the stop too.
//
// Read/write locks and semaphores are checked too. A hold marked Shared
// (a read hold) may overlap other shared holds of its path, never an
// exclusive one; exclusive holds (a mutex's, a writer's) overlap nothing.
// The token check then looks at exclusive holds only, and the late-loss
// check of a shared hold at the next exclusive hold of another process.
// With Options.Permits = n > 0 the holds are a semaphore's: each takes
// Hold.Permits permits (0 counts as 1), and an overlap is an enter at
// which more than n permits are in use on the path, counting every hold
// entered and not yet left; a late loss is an enter at which more than n
// are in use when lost holds count until their holders saw the loss.
// Tokens are not checked then (leases are taken side by side). Holds
// without these marks and Permits 0 are checked exactly as before.
//
// [OverlapPairs] tells, for a mixed fleet, which groups of holders (lock
// implementations, say) overlapped which.
package exclusion

import (
	"cmp"
	"fmt"
	"slices"
)

// Hold is one recorded critical section.
type Hold struct {
	Proc  int32 // holder process
	G     int32 // goroutine within the process
	Path  int32 // lock path index
	Token int64 // fencing token; 0 when unknown
	Enter int64 // ns on the shared clock (or a logical clock: see ReadJournal)
	Exit  int64 // ns on the shared clock; 0 when the hold never ended
	// Shared marks a read hold of a read/write lock: it may overlap other
	// shared holds of the path, never an exclusive one.
	Shared bool `json:"shared,omitempty"`
	// Permits is how many permits a semaphore hold takes (0 counts as 1);
	// see Options.Permits.
	Permits int32 `json:"permits,omitempty"`
	// Loss is when the holder saw the hold lost (shared clock); 0: it was
	// not lost, or not watched.
	Loss int64 `json:"loss,omitempty"`
	// Cut is set by Check on a hold of a killed process that never ended:
	// its Exit is then the kill time.
	Cut bool `json:"cut,omitempty"`
	// Paused is set by Check on a hold of a paused process that was in
	// progress at the stop (or granted before it and entered after the
	// process woke): its Exit (and then its Enter) is the stop.
	Paused bool `json:"paused,omitempty"`
	// Told is set by Check on a hold whose holder saw it lost before it
	// left: its Exit is then the Loss (see the package doc).
	Told bool `json:"told,omitempty"`
}

func (h Hold) String() string {
	exit := "never"
	if h.Exit != 0 {
		exit = fmt.Sprint(h.Exit)
	}
	if h.Cut {
		exit += " (killed)"
	}
	if h.Paused {
		exit += " (paused)"
	}
	if h.Told {
		exit += " (told of its loss)"
	}
	kind := ""
	switch {
	case h.Shared:
		kind = " read"
	case h.Permits > 0:
		kind = fmt.Sprintf(" %d permit(s)", h.Permits)
	}
	return fmt.Sprintf("proc %d goroutine %d%s token %d [%d, %s)", h.Proc, h.G, kind, h.Token, h.Enter, exit)
}

// Options say what the lock under test promises about tokens.
type Options struct {
	// Tokens is false when the implementation exposes no token; the token
	// check is then skipped.
	Tokens bool
	// SameNodeHandoff allows consecutive holds of one process to share a
	// token: the lock passed the hold between local goroutines and kept its
	// ZooKeeper node.
	SameNodeHandoff bool
	// Killed maps processes killed during the run to the time (shared
	// clock) by which they were known dead. Their holds that never ended
	// are cut at that time instead of being counted as lost.
	Killed map[int32]int64
	// Permits, when positive, makes the holds a semaphore's of that many
	// permits: at most Permits permits may be in use at any instant (the
	// sum of Hold.Permits over the holds in at once). Tokens are then not
	// checked.
	Permits int
	// Paused maps processes stopped during the run (SIGSTOP past their
	// session timeout) to their pauses: their holds in progress at a stop
	// are cut there (see the package doc).
	Paused map[int32][]Pause
}

// Pause is a stretch of time during which a process did not run.
type Pause struct {
	// Stop is a moment by which the process was known stopped (no hold of
	// it can enter after Stop and before Cont); Cont, a moment before it
	// was let go on.
	Stop, Cont int64
	// Until bounds the aftermath, by when the process had surely seen every
	// hold it lost: a hold it entered in [Cont, Until] with a token below
	// one granted to another process since Stop was granted before the
	// stop (0: Cont).
	Until int64
}

// Kind names a kind of violation.
type Kind string

// The kinds of violation.
const (
	Overlap  Kind = "overlap"
	Token    Kind = "token"
	Lost     Kind = "lost"
	LateLoss Kind = "late-loss"
)

// Violation is one example of a violation, for the report.
type Violation struct {
	Kind   Kind   `json:"kind"`
	Path   int32  `json:"path"`
	Prev   *Hold  `json:"prev,omitempty"` // the earlier hold involved, if any
	Hold   Hold   `json:"hold"`
	Detail string `json:"detail"`
}

// PathResult is the verdict for one lock path.
type PathResult struct {
	Path             int32 `json:"path"`
	Holds            int   `json:"holds"`
	Overlaps         int   `json:"overlaps"`
	TokenRegressions int   `json:"token_regressions"`
	Lost             int   `json:"lost"`
	LateLosses       int   `json:"late_losses"`
	Cut              int   `json:"cut_by_kill,omitempty"`
	PausedCut        int   `json:"cut_by_pause,omitempty"`
	ToldCut          int   `json:"cut_by_loss,omitempty"`
}

// Result is the verdict over all paths.
type Result struct {
	Holds            int          `json:"holds"`
	Overlaps         int          `json:"overlaps"`
	TokenRegressions int          `json:"token_regressions"`
	Lost             int          `json:"lost"`
	LateLosses       int          `json:"late_losses"` // loss before grant broken
	LossesChecked    int          `json:"losses_checked"`
	Cut              int          `json:"cut_by_kill"`            // holds of killed processes, cut at the kill (not violations)
	PausedCut        int          `json:"cut_by_pause,omitempty"` // holds of paused processes, cut at the stop (not violations; their loss is not checked)
	ToldCut          int          `json:"cut_by_loss,omitempty"`  // holds that went on after their holder saw the loss, cut at it (not violations)
	TokensChecked    bool         `json:"tokens_checked"`
	Paths            []PathResult `json:"paths"`
	Examples         []Violation  `json:"examples,omitempty"`
}

// OK reports whether no violation was found.
func (r Result) OK() bool {
	return r.Overlaps == 0 && r.TokenRegressions == 0 && r.Lost == 0 && r.LateLosses == 0
}

// Violations is the number of violations of every kind.
func (r Result) Violations() int { return r.Overlaps + r.TokenRegressions + r.Lost + r.LateLosses }

// MaxExamples bounds how many violations Check describes.
const MaxExamples = 20

// Check examines holds (in any order; the slice is reordered, and the
// holds that Options.Killed or Options.Paused cuts get their Exit and Cut
// or Paused set, those that went on after their loss their Exit and
// Told).
func Check(holds []Hold, opt Options) Result {
	if opt.Permits > 0 {
		opt.Tokens = false // leases are taken side by side: no order of tokens
	}
	res := Result{Holds: len(holds), TokensChecked: opt.Tokens}
	cutPaused(holds, opt.Paused)
	slices.SortFunc(holds, func(a, b Hold) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Enter, b.Enter), cmp.Compare(a.Exit, b.Exit))
	})
	for len(holds) > 0 {
		n := 1
		for n < len(holds) && holds[n].Path == holds[0].Path {
			n++
		}
		check := checkPath
		if opt.Permits > 0 {
			check = checkPermits
		}
		pr := check(holds[:n], opt, &res)
		res.Paths = append(res.Paths, pr)
		res.Overlaps += pr.Overlaps
		res.TokenRegressions += pr.TokenRegressions
		res.Lost += pr.Lost
		res.LateLosses += pr.LateLosses
		res.Cut += pr.Cut
		res.PausedCut += pr.PausedCut
		res.ToldCut += pr.ToldCut
		holds = holds[n:]
	}
	return res
}

func (r *Result) example(v Violation) {
	if len(r.Examples) < MaxExamples {
		r.Examples = append(r.Examples, v)
	}
}

// checkPath checks the holds of one path, sorted by enter time: exclusive
// holds overlap nothing, shared ones only other shared ones.
func checkPath(holds []Hold, opt Options, res *Result) PathResult {
	pr := PathResult{Path: holds[0].Path, Holds: len(holds)}
	c := pathCheck{opt: opt, pr: &pr, res: res}
	for i := range holds {
		h := &holds[i]
		cutKilled(h, opt, &pr)
		if h.Paused {
			pr.PausedCut++
		}
		cutAtLoss(h, &pr)
		if h.Exit == 0 || h.Exit < h.Enter {
			lost(h, &pr, res)
		} else {
			c.overlap(h)
		}
		if h.Loss != 0 && !h.Paused {
			res.LossesChecked++
			checkLoss(holds, i, &pr, res)
		}
		c.token(h)
	}
	return pr
}

// pathCheck is what checkPath keeps of the holds before the current one.
type pathCheck struct {
	opt       Options
	pr        *PathResult
	res       *Result
	last      *Hold // the complete hold that ends latest so far
	lastExcl  *Hold // the complete exclusive hold that ends latest so far
	lastToken *Hold // the latest exclusive hold with a known token
}

// overlap checks the complete hold h against those before it.
func (c *pathCheck) overlap(h *Hold) {
	// A shared hold conflicts with exclusive holds only.
	prev := c.last
	if h.Shared {
		prev = c.lastExcl
	}
	if prev != nil && h.Enter < prev.Exit {
		c.pr.Overlaps++
		c.res.example(Violation{Kind: Overlap, Path: h.Path, Prev: prev, Hold: *h,
			Detail: fmt.Sprintf("entered %d ns before the holder left", prev.Exit-h.Enter)})
	}
	if c.last == nil || h.Exit > c.last.Exit {
		c.last = h
	}
	if !h.Shared && (c.lastExcl == nil || h.Exit > c.lastExcl.Exit) {
		c.lastExcl = h
	}
}

// token checks that h's token is above the previous exclusive hold's
// (equal only for a hand-off within one process, when allowed).
func (c *pathCheck) token(h *Hold) {
	if !c.opt.Tokens || h.Token == 0 || h.Shared {
		return
	}
	if p := c.lastToken; p != nil {
		switch {
		case h.Token < p.Token:
			c.pr.TokenRegressions++
			c.res.example(Violation{Kind: Token, Path: h.Path, Prev: p, Hold: *h,
				Detail: fmt.Sprintf("token %d after %d", h.Token, p.Token)})
		case h.Token == p.Token && !(c.opt.SameNodeHandoff && h.Proc == p.Proc):
			c.pr.TokenRegressions++
			detail := fmt.Sprintf("token %d repeated by another process", h.Token)
			if h.Proc == p.Proc {
				detail = fmt.Sprintf("token %d repeated without hand-off", h.Token)
			}
			c.res.example(Violation{Kind: Token, Path: h.Path, Prev: p, Hold: *h, Detail: detail})
		}
	}
	c.lastToken = h
}

// lost counts a hold that never ended (or ended before it began).
func lost(h *Hold, pr *PathResult, res *Result) {
	pr.Lost++
	detail := "entered, never left"
	if h.Exit != 0 {
		detail = "exit before enter"
	}
	res.example(Violation{Kind: Lost, Path: h.Path, Hold: *h, Detail: detail})
}

// checkLoss checks that the lost hold holds[i] was seen lost before the
// next grant of its path to another process (for a shared hold: the next
// exclusive grant; other readers may come in meanwhile).
func checkLoss(holds []Hold, i int, pr *PathResult, res *Result) {
	h := &holds[i]
	for j := i + 1; j < len(holds); j++ {
		k := &holds[j]
		if k.Proc == h.Proc || (h.Shared && k.Shared) {
			continue
		}
		if k.Enter < h.Loss {
			pr.LateLosses++
			res.example(Violation{Kind: LateLoss, Path: h.Path, Prev: h, Hold: *k,
				Detail: fmt.Sprintf("granted %d ns before the holder saw its hold lost", h.Loss-k.Enter)})
		}
		return
	}
}
