//go:build tierlockmutants

package mutant

import "os"

// name is the bug this process runs with, read once at start.
var name = os.Getenv(Env)

// On reports whether the bug name is switched on: TIERLOCK_MUTANT named it
// when the process started.
func On(n string) bool { return n != "" && n == name }

// Set switches on the bug n ("" for none) in this process and returns the
// function that switches back: for a test that tries one bug after another
// in one process (the write path's explorer). Call it before the code under
// test runs, never beside it.
func Set(n string) (restore func()) {
	old := name
	name = n
	return func() { name = old }
}
