package gocronlock

import "github.com/tierlock/tierlock/zklock"

// SetAfterReadHook makes fn run between the read and the write of every
// run node, until the returned function is called.
func SetAfterReadHook(fn func(runPath string, h *zklock.Hold)) (restore func()) {
	testHookAfterRead = fn
	return func() { testHookAfterRead = nil }
}

// Ran, LastRun and NodeName expose the rule's pieces to the tests.
var (
	Ran       = ran
	LastRunOf = lastRun
	NodeName  = nodeName
)

// Record returns the run node data a writer with last and window (ms)
// writes.
func Record(last, window int64) []byte { return record{Last: last, Window: window}.encode() }
