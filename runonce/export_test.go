package runonce

import (
	"context"
	"testing"
	"time"
)

// What the external tests (package runonce_test) steer, exported to them
// only.

// SetAfterReadHook makes fn run between the read and the write of every
// run node, until the returned function is called.
func SetAfterReadHook(fn func(runPath string)) (restore func()) {
	testHookAfterRead = fn
	return func() { testHookAfterRead = nil }
}

// SetOverloadSettle sets how long an overload must settle to be over,
// until the returned function is called.
func SetOverloadSettle(d time.Duration) (restore func()) {
	old := overloadSettle
	overloadSettle = d
	return func() { overloadSettle = old }
}

// NodeName exposes the key's escaping.
var NodeName = nodeName

// JobCount is how many job entries r keeps.
func JobCount(r *Runner) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.jobs)
}

// AfterWindow is how long after a run of a job of window w its next
// attempt runs: the window, and a margin for the latencies. The margin is
// what the next write may take and still confirm its run (a run node
// write answered later than the margin past the window is ErrSlowWrite):
// 20 ms was met by a write answered in 24 ms in a loaded make test's race
// run (run 114).
func AfterWindow(w time.Duration) time.Duration { return w + 100*time.Millisecond }

// NeverOverloaded has the Runners never take themselves for overloaded,
// until the returned function is called: the envelope's lines, whose
// tests' small windows a loaded machine's latencies would make overload.
func NeverOverloaded() (restore func()) {
	testHookNeverLate = true
	return func() { testHookNeverLate = false }
}

// WaitLockFree waits until r's job named key has no lock node (lockGone).
func WaitLockFree(t *testing.T, r *Runner, key string) {
	t.Helper()
	lockGone(t, r, key)
}

// SetTakenHook makes fn run in every claim between its take of the job's
// lock and its write of the run node (a first claim's create, a named
// tick's write), until the returned function is called.
func SetTakenHook(fn func()) (restore func()) {
	testHookTaken = fn
	return func() { testHookTaken = nil }
}

// SetHolderReadHook makes fn's error, if any, the outcome of a claim's
// read of its job's lock holder (awaitClaim), as a dropped connection's.
func SetHolderReadHook(fn func() error) (restore func()) {
	testHookHolderRead = fn
	return func() { testHookHolderRead = nil }
}

// RemoveAfterRelease is removeAfterRelease: RemoveJob, called again while
// the job's lock is held (ErrLockHeld), for at most 2 s.
func RemoveAfterRelease(ctx context.Context, r *Runner, job string) error {
	return removeAfterRelease(ctx, r, job)
}
