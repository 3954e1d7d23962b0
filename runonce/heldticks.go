package runonce

import (
	"slices"

	"github.com/tierlock/tierlock/internal/runrec"
)

// An episode of ticks lost to a held lock ends when the lock is free
// again (lost.go), but a named tick it lost may still run after: its
// holder, woken from a stop or its clock behind, fires it late, and no
// instance ran it. heldTicks (ticklists.go) keeps such ticks of a job's ended episodes
// until the record decides each: shown run (run after) or let go (lost),
// and tells them in one line when the last is decided.

// heldDecided decides j's undecided ticks by last, a record read, and
// tells, once none is left, how many ran after and how many were lost.
func (c *claimer) heldDecided(j *job, last runrec.Last) {
	h := &j.after
	if len(h.ticks) == 0 {
		return
	}
	w := ms(j.window)
	h.ranAfter += takeBack(&h.ticks, last, w)
	n := len(h.ticks)
	h.ticks = slices.DeleteFunc(h.ticks, func(tick int64) bool { return !last.Open(tick, w) })
	h.lost += n - len(h.ticks)
	if len(h.ticks) > 0 {
		return
	}
	c.tell.log.Warn("job's held ticks decided: the ticks undecided when its lock was free again ran after (the holder's, late) or were let go by the record (lost)",
		"job", j.key, "ticks_lost", h.lost, "ticks_run_after", h.ranAfter)
	*h = heldTicks{}
}
