//go:build !linux

package exclusion

import "time"

// Now returns the wall clock in nanoseconds: outside Linux, where the
// suite runs on CLOCK_MONOTONIC (clock_linux.go), the one clock package
// syscall reads that all processes of the machine share. A step of the
// wall clock (NTP) during a run can shift the times of the holds that
// span it.
func Now() int64 { return time.Now().UnixNano() }
