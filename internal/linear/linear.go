// Package linear checks the histories of a lock with a standard checker:
// Porcupine (github.com/anishathalye/porcupine, the linearizability
// checker etcd uses), against a sequential model of a lock with fencing
// tokens and of the fenced store its holders write to. It is a second,
// independent opinion beside internal/exclusion, on the same records: the
// holds (exclusion.Hold: enter and exit times, token, process, goroutine,
// path) and the writes the fenced store admitted and refused
// (exclusion.Write with its time, At).
//
// # The model
//
// One state per lock path: the exclusive holder (nobody, or a process's
// goroutine), the read holds in, the semaphore permits in use, the token
// last granted to an exclusive hold and its process, and the highest token
// the fenced store admitted. The operations and their steps:
//
//   - Acquire by a client, returning the token granted. An exclusive hold
//     needs nobody in (no holder, no reader) and, when tokens are checked,
//     a token above the last one granted (equal only for a hand-off within
//     the process that had it, with Options.SameNodeHandoff); it becomes
//     the holder. A read hold needs no exclusive holder. A semaphore hold
//     of k permits needs k free of Options.Permits (tokens are then not
//     checked: leases are held side by side).
//   - Release by a client: an exclusive hold must be its client's; a read
//     hold needs a reader in; a semaphore's permits must be in use.
//   - Write of a token to the fenced store, admitted or refused: the
//     store's own rule (package fence): it admits a token no lower than
//     the highest it admitted, which becomes the highest, and refuses a
//     lower one. A write is not tied to the holder: the store knows nothing
//     of the lock, and a stale holder's write is exactly what it refuses.
//
// # From records to operations
//
// A hold [enter, exit) becomes an Acquire at the instant enter and a
// Release at the instant exit (Call = Return); a write, the instant the
// store decided it. The lock granted the hold at or before enter and
// released it at or after exit, so these are the narrowest intervals the
// record supports; for this model they decide as the wide ones would (a
// linearization of the wide intervals orders every pair of holds as their
// exit and enter instants do), and they keep the checker's search to the
// operations of one instant, which Porcupine's intervals, closed, make
// concurrent: a hold may begin at the nanosecond its predecessor ended, as
// in internal/exclusion. A hold never left has no Release: it holds for
// ever. Times are the records' own: the shared clock (exclusion.Now) or a
// journal's line numbers. Give Check the holds as exclusion.Check left
// them: the holds of killed and paused processes cut there, and those
// that went on after their holder saw the loss cut at the loss.
//
// # Partitions and windows
//
// The paths are independent, so each is a partition of its own (Porcupine's
// Model.Partition). Porcupine's memory grows with the square of a
// partition's operations (it keeps a set of the operations linearized per
// step), so a path's operations are cut into windows of
// Options.WindowOps, never inside an instant (a window is longer only by
// the operations of its last instant), and each window is a partition
// that opens, through a begin operation, in the state that applying every
// earlier operation in order leaves: the state a correct lock is in at
// that instant (whether those operations were legal is their own
// window's verdict). Windows are checked together, at most WindowOps
// operations per call of Porcupine, each call bounded by Options.Timeout;
// the check's time grows with the history's length, not its square. The
// result says when a path was split ("checked in K windows of at most N
// operations"). A path's operations are read from the holds in place,
// through sorted indices, one window at a time.
//
// Not checked here: the late-loss rule (a holder told of its loss before
// the next grant) and lost holds as such, which internal/exclusion checks;
// writes without a time.
package linear

import (
	"fmt"
	"time"

	"github.com/tierlock/tierlock/internal/exclusion"
)

// History is what a run recorded.
type History struct {
	// Holds are the critical sections, as exclusion.Check left them.
	Holds []exclusion.Hold
	// Admitted and Refused are the writes the fenced store admitted and
	// refused, each at the instant it decided (At, on the holds' clock).
	// Writes with At 0 cannot be placed and are not checked.
	Admitted, Refused []exclusion.Write
}

// Options say what the lock under test promises, and bound the check.
type Options struct {
	// Tokens checks that each exclusive hold's token is above the last
	// one's (as exclusion.Options.Tokens).
	Tokens bool
	// SameNodeHandoff lets consecutive holds of one process share a token.
	SameNodeHandoff bool
	// Permits, when positive, makes the holds a semaphore's of that many
	// permits (Hold.Permits each, 0 counting as 1).
	Permits int
	// Timeout bounds each call of Porcupine (0: DefaultTimeout): one that
	// does not decide by then makes the verdict Unknown, and the windows
	// after it are not checked.
	Timeout time.Duration
	// WindowOps is the most operations of one path checked as one
	// partition (0: DefaultWindowOps); a longer path is cut into windows.
	WindowOps int
}

// Defaults of Options.
const (
	DefaultTimeout   = 20 * time.Second
	DefaultWindowOps = 5000
)

// Verdict is the outcome of a check.
type Verdict string

// The verdicts.
const (
	Linearizable    Verdict = "linearizable"
	NotLinearizable Verdict = "not linearizable"
	Unknown         Verdict = "unknown" // the check timed out first
)

// Result is the outcome of Check.
type Result struct {
	Verdict    Verdict `json:"verdict"`
	Paths      int     `json:"paths"`
	Operations int     `json:"operations"` // acquires, releases and writes
	// Windows is the number of partitions checked: one per path, more
	// when a path had more than WindowOps operations (Split paths).
	Windows   int   `json:"windows"`
	WindowOps int   `json:"window_ops"`
	Split     int   `json:"paths_split,omitempty"`
	Decided   int   `json:"windows_decided"`
	Failed    int   `json:"windows_failed,omitempty"`
	Untimed   int   `json:"writes_without_time,omitempty"`
	Millis    int64 `json:"ms"`
	// Timeout is the bound each call of Porcupine had.
	Timeout time.Duration `json:"timeout_ns"`
	// Violation is the first window's failure, explained.
	Violation *Violation `json:"violation,omitempty"`
}

// Violation explains a window that is not linearizable: the first
// operation no order of the window could take, the state the longest
// linearizable prefix left, and why the model refuses the one in that
// state.
type Violation struct {
	Path       int32  `json:"path"`
	Window     int    `json:"window"`
	Windows    int    `json:"windows"`
	Op         string `json:"op"`
	At         int64  `json:"at"`
	State      string `json:"state"`
	Reason     string `json:"reason"`
	Linearized int    `json:"linearized"` // operations of the window in the prefix
}

func (v Violation) String() string {
	where := fmt.Sprintf("path %d", v.Path)
	if v.Windows > 1 {
		where += fmt.Sprintf(" window %d of %d", v.Window, v.Windows)
	}
	return fmt.Sprintf("%s: %s at %d: %s (after %d operations: %s)", where, v.Op, v.At, v.Reason, v.Linearized, v.State)
}

// OK reports whether the history was found linearizable.
func (r Result) OK() bool { return r.Verdict == Linearizable }

// String is the result in one line, beginning "porcupine: ".
func (r Result) String() string {
	paths := "paths"
	if r.Paths == 1 {
		paths = "path"
	}
	out := fmt.Sprintf("porcupine: %s (%d %s, %d operations, %d ms)", r.Verdict, r.Paths, paths, r.Operations, r.Millis)
	if r.Split > 0 {
		out += fmt.Sprintf("; checked in %d windows of at most %d operations", r.Windows, r.WindowOps)
	}
	if r.Untimed > 0 {
		out += fmt.Sprintf("; %d writes without a time not checked", r.Untimed)
	}
	switch r.Verdict {
	case NotLinearizable:
		if r.Windows > 1 {
			out += fmt.Sprintf("; %d of %d windows fail", r.Failed, r.Windows)
		}
		if r.Violation != nil {
			out += ": " + r.Violation.String()
		}
	case Unknown:
		out += fmt.Sprintf(": a call timed out after %v with %d of %d windows decided", r.Timeout, r.Decided, r.Windows)
	}
	return out
}
