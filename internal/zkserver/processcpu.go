package zkserver

import "time"

// ProcessCPU is the processor time (user + system, every thread) that
// process pid has used since it started, read as [Cluster.CPU] reads a
// member's: from /proc/<pid>/stat on Linux, in clock ticks of 10ms; it
// fails on systems without /proc. The stress command reads the
// redis-server of its redsync runs (internal/redisserver) through it, so
// that the server CPU of every implementation is measured one way.
func ProcessCPU(pid int) (time.Duration, error) { return processCPU(pid) }
