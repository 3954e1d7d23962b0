//go:build race

package gocronlock_test

// raceBuild: the fleet's instances are this binary, race-instrumented, and
// several times slower (TestFleetScale's default size).
const raceBuild = true
