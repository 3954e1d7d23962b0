// Package oncehook lets the tests of the packages built on runonce
// (gocronlock, cronlock) reach the few internals of runonce that their
// tests steer: runonce sets these functions when it is initialized, and
// only tests call them (through their export_test.go), so that runonce
// exports nothing for tests.
package oncehook

import "time"

var (
	// SetAfterRead makes fn run between the read and the write of every
	// run node, until restore is called.
	SetAfterRead func(fn func(runPath string)) (restore func())
	// SetOverloadSettle sets how long an overload must settle to be over,
	// until restore is called.
	SetOverloadSettle func(d time.Duration) (restore func())
	// NodeName returns the path segment that names a job key below a
	// root.
	NodeName func(key string) (string, error)
	// JobCount returns how many job entries r, a *runonce.Runner, keeps.
	JobCount func(r any) int
)
