package gocronlock

import (
	"time"

	"github.com/tierlock/tierlock/internal/oncehook"
)

// SetAfterReadHook makes fn run between the read and the write of every
// run node, until the returned function is called.
func SetAfterReadHook(fn func(runPath string)) (restore func()) {
	return oncehook.SetAfterRead(fn)
}

// NodeName exposes the key's escaping to the tests.
var NodeName = oncehook.NodeName

// AfterWindow is how long after a run of a job of window w its next
// attempt runs: the window, and a margin for the latencies.
func AfterWindow(w time.Duration) time.Duration { return w + 20*time.Millisecond }

// JobCount is how many job entries l keeps.
func JobCount(l *Locker) int {
	return oncehook.JobCount(l.r)
}

// SetOverloadSettle sets how long an overload must settle to be over,
// until the returned function is called.
func SetOverloadSettle(d time.Duration) (restore func()) {
	return oncehook.SetOverloadSettle(d)
}
