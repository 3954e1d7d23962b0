package exclusion

import (
	"syscall"
	"unsafe"
)

// clockMonotonic is CLOCK_MONOTONIC's id (linux/time.h), which package
// syscall does not name.
const clockMonotonic = 1

// Now returns CLOCK_MONOTONIC in nanoseconds. Unlike the monotonic reading
// in a Go time.Time, which counts from the start of each process, this
// clock is one for all processes of the machine, so enter and exit times
// taken by different processes can be compared. It is the system call
// golang.org/x/sys/unix.ClockGettime makes, without that module in the
// library's requirements.
func Now() int64 {
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		panic("exclusion: clock_gettime(CLOCK_MONOTONIC): " + errno.Error())
	}
	return ts.Nano()
}
