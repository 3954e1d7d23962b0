//go:build race

package writes_test

// raceBuild: the race detector slows a schedule about eightfold; the race
// run explores a tenth of the schedules (make test runs the whole count
// without it).
const raceBuild = true
