//go:build !tierlockmutants

package mutant

const tagged = false
