//go:build tierlockmutants

package mutant

import "os"

// name is the bug this process runs with, read once at start.
var name = os.Getenv(Env)

// On reports whether the bug name is switched on: TIERLOCK_MUTANT named it
// when the process started.
func On(n string) bool { return n != "" && n == name }
