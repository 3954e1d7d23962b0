//go:build race

package session

// raceBuild: the race detector slows a schedule about tenfold; the race
// run explores a fortieth of TestLeaseExplore's schedules, on one core
// (make test runs the whole count without it).
const raceBuild = true
