package runonce

import (
	"sync/atomic"
	"time"
)

// A stall of this process (issue 50, item 8). A process stopped past its
// session timeout (a SIGSTOP, a suspend) finds, when it resumes, its
// session's connection cut and its session expired, and its Claims fail
// until a new session connects: told as "ZooKeeper unreachable ...
// reachable again", though ZooKeeper answered all along. The Runner sees
// the stall itself: a Claim that returns long after its deadline (the
// process did not run to end it: a Claim never outlasts its lock timeout
// otherwise), or a stale tick (ClaimTick: its scheduler fired it late). An
// outage that begins within stallMemory of such a sign is told as the
// stall's: the session's connection lost while this process was stopped,
// and its end as the session's return, with whether the session was
// replaced (it expired).

// stallMemory is how long a sign of a stall colours the outage that
// follows.
const stallMemory = 10 * time.Second

// stall keeps the last sign of a stall of this process.
type stall struct {
	at atomic.Int64 // Unix ns of the last sign; 0 none
}

// note notes a sign of a stall, now.
func (s *stall) note() { s.at.Store(time.Now().UnixNano()) }

// recent reports whether a sign of a stall came within stallMemory.
func (s *stall) recent() bool {
	at := s.at.Load()
	return at != 0 && time.Since(time.Unix(0, at)) < stallMemory
}

// stalledDuring notes a stall if a Claim that began at entry returns now,
// long after its deadline.
func (r *Runner) stalledDuring(entry time.Time) {
	if time.Since(entry) > r.cfg.timeout+time.Second {
		r.stall.note()
	}
}
