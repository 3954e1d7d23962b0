package exclusion

import "golang.org/x/sys/unix"

// Now returns CLOCK_MONOTONIC in nanoseconds. Unlike the monotonic reading
// in a Go time.Time, which counts from the start of each process, this
// clock is one for all processes of the machine, so enter and exit times
// taken by different processes can be compared.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("exclusion: clock_gettime(CLOCK_MONOTONIC): " + err.Error())
	}
	return ts.Nano()
}
