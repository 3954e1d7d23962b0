package zkserver

import (
	"fmt"
	"time"
)

// SessionTimeouts are the bounds the servers started here apply to the
// session timeout a client asks for; both 0 for external servers, whose
// bounds are unknown.
func (c *Cluster) SessionTimeouts() (lo, hi time.Duration) {
	if c.external != nil {
		return 0, 0
	}
	return c.sessionBounds()
}

// CPU returns the processor time (user + system, every thread) that member
// i's server process has used since it started, as the kernel accounts it
// (/proc/<pid>/stat on Linux, in clock ticks of 10ms). It fails with
// ErrExternal for external servers, ErrNotRunning for a stopped member, and
// on systems without /proc. A benchmark reads it at the edges of its
// window and divides the difference by what it counted in between.
func (c *Cluster) CPU(i int) (time.Duration, error) {
	pid := c.Pid(i)
	if pid == 0 {
		if _, err := c.control(i); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("%w: member %d", ErrNotRunning, i)
	}
	d, err := processCPU(pid)
	if err != nil {
		return 0, fmt.Errorf("zkserver: CPU of member %d: %w", i, err)
	}
	return d, nil
}

// TotalCPU is CPU summed over every member; it fails if any member's
// cannot be read.
func (c *Cluster) TotalCPU() (time.Duration, error) {
	var sum time.Duration
	for i := 0; i < c.Size(); i++ {
		d, err := c.CPU(i)
		if err != nil {
			return 0, err
		}
		sum += d
	}
	return sum, nil
}
