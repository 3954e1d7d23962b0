//go:build !tierlockmutants

package mutant

// On reports whether the bug name is switched on: never, without the
// tierlockmutants tag (a constant the compiler inlines, dropping the
// branch it guards).
func On(name string) bool { return false }
