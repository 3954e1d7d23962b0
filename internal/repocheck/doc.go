// Package repocheck holds the repository's own checks, run by make test:
// the zip of github.com/tierlock/tierlock that go get downloads stays
// small and well formed (zip_test.go), and every relative link in the
// tracked Markdown files resolves (links_test.go).
//
// It is a module of its own for two reasons: measuring the zip takes
// golang.org/x/mod, which the library should not require of its users,
// and a directory holding a go.mod is left out of the library's module
// zip, so these checks are not downloaded either. It has no API.
package repocheck
