package exclusion

import (
	"cmp"
	"fmt"
	"slices"
)

// Write is one write that a holder made, on behalf of a hold, to a
// resource that its lock guards, as the resource applied it: a ZooKeeper
// node written through the lock's guarded transaction, say, or a store
// behind a fence of tokens. Writes the resource refused are not Writes.
type Write struct {
	Path  int32 `json:"path"`
	Proc  int32 `json:"proc"`
	G     int32 `json:"g"`
	Token int64 `json:"token"` // the fencing token of the hold the write was made for
	// Seq orders the writes of a path as the resource applied them: a
	// sequence number it gave, or the position in its log. At is when, on
	// the shared clock (0: unknown; for the report only).
	Seq int64 `json:"seq"`
	At  int64 `json:"at,omitempty"`
}

func (w Write) String() string {
	return fmt.Sprintf("proc %d goroutine %d token %d (#%d)", w.Proc, w.G, w.Token, w.Seq)
}

// StaleWrite is one example of a stale write, for the report.
type StaleWrite struct {
	Path   int32  `json:"path"`
	Prev   Write  `json:"prev"` // the later holder's write that landed before it
	Write  Write  `json:"write"`
	Detail string `json:"detail"`
}

// WritePath is the verdict on the writes of one lock path.
type WritePath struct {
	Path   int32 `json:"path"`
	Writes int   `json:"writes"`
	Stale  int   `json:"stale"`
}

// WriteResult is the verdict of CheckWrites.
type WriteResult struct {
	Writes int `json:"writes"`
	// Stale counts the writes that landed after a write of a later holder:
	// a stale holder's write that the resource let through.
	Stale    int          `json:"stale_landed"`
	Paths    []WritePath  `json:"paths,omitempty"`
	Examples []StaleWrite `json:"examples,omitempty"`
}

// OK reports whether no stale write landed.
func (r WriteResult) OK() bool { return r.Stale == 0 }

// CheckWrites checks the history of a guarded resource (writes in any
// order; the slice is reordered): per path, in the order the resource
// applied them (Seq), no write may carry a token lower than one that
// landed before it, nor the same token as another process's (tokens are
// a hold's, and two processes never share one). A write of one hold may
// follow another of the same hold, and under a hand-off consecutive
// holders in one process share their token. Such a stale write is what
// fencing is for: the write of a holder that lost its lock without
// knowing it (paused past its session timeout, say), applied after the
// next holder's. Writes of token 0 (unknown) are skipped.
func CheckWrites(writes []Write) WriteResult {
	slices.SortFunc(writes, func(a, b Write) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Seq, b.Seq))
	})
	res := WriteResult{Writes: len(writes)}
	for len(writes) > 0 {
		n := 1
		for n < len(writes) && writes[n].Path == writes[0].Path {
			n++
		}
		pr := WritePath{Path: writes[0].Path, Writes: n}
		var high *Write // the write of the highest token so far
		for i := range writes[:n] {
			w := &writes[i]
			if w.Token == 0 {
				continue
			}
			if high != nil && (w.Token < high.Token || w.Token == high.Token && w.Proc != high.Proc) {
				pr.Stale++
				detail := fmt.Sprintf("token %d landed after token %d", w.Token, high.Token)
				if w.Token == high.Token {
					detail = fmt.Sprintf("token %d written by two processes", w.Token)
				}
				if len(res.Examples) < MaxExamples {
					res.Examples = append(res.Examples, StaleWrite{Path: w.Path, Prev: *high, Write: *w, Detail: detail})
				}
				continue
			}
			if high == nil || w.Token > high.Token {
				high = w
			}
		}
		res.Stale += pr.Stale
		res.Paths = append(res.Paths, pr)
		writes = writes[n:]
	}
	return res
}
