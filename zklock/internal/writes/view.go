package writes

import (
	"cmp"
	"slices"
	"strings"
)

// What the queue holds, read by the session (DeleteQueued) and its tests,
// and the lease explorer's ordering of one instant's writes.

// DeleteQueued reports whether a delete of a node on the lock at path
// waits in the queue.
func (q *Queue) DeleteQueued(path string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.deletes[path] > 0
}

// OrderInstants puts each run of writes queued at one instant in the
// order of their kinds and first paths, where the run stands; writes
// queued at different instants keep their order. It is the lease
// explorer's (zklock/internal/session): its goroutines hand their writes
// at one virtual instant in the order the Go scheduler runs them, and a
// schedule's rounds must be the same in every run of it (with one write a
// round, the first taken was either acquisition's).
func (q *Queue) OrderInstants() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i := 0; i < len(q.queue); {
		j := i + 1
		for j < len(q.queue) && q.queue[j].at.Equal(q.queue[i].at) {
			j++
		}
		slices.SortStableFunc(q.queue[i:j], func(a, b *Write) int {
			return cmp.Or(cmp.Compare(a.kind, b.kind), strings.Compare(OpPath(a.ops[0]), OpPath(b.ops[0])))
		})
		i = j
	}
}

// Idle reports whether the queue is empty and no writer runs: the next
// write starts a writer, which waits for the session (and a test's gate,
// session.Hooks.WriterGate, hooks.go) before it takes anything. An empty queue alone
// does not say so: a writer that had looked at the session before a
// test's gate was set could still take what comes next (make test run of
// 2026-11-28 14:26 UTC, TestRefusedBatchGoesAgainAtOnce).
func (q *Queue) Idle() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue) == 0 && !q.running
}

// Len returns how many writes wait in the queue, not yet taken.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}

// Count returns how many writes of kind k wait in the queue, not yet
// taken: what a test needs where the session may queue a write of its own
// (a lost hold's delete) beside the ones it watches.
func (q *Queue) Count(k Kind) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, w := range q.queue {
		if w.kind == k {
			n++
		}
	}
	return n
}
