package zkserver

import (
	"fmt"
	"os"
	"time"
)

// libfaketime, Debian's faketime package (scripts/install-deps.sh): a
// preloaded library that shifts what a process reads of the wall clock.
const libFaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"

// WithClockOffset runs the servers under libfaketime with their wall clock
// d ahead of the host's (behind when d is negative): the clock that dates
// a znode's mtime and ctime, as a server whose clock is not its clients'.
// Their monotonic clock is shifted alike, so that its durations (ticks,
// session expiry) are the host's: left to the host, libfaketime's
// wrappers of the JVM's timed waits made each request 15 times slower
// (11.7 s for 1,000 creates, against 0.75 s). Start returns an error
// matching ErrNotInstalled when libfaketime is missing. A JVM honours it
// (TestClockOffset reads an mtime against the host's clock).
func WithClockOffset(d time.Duration) Option { return func(c *config) { c.clockOffset = d } }

// env returns the environment of the servers' processes: nil (the
// host's) unless WithClockOffset set one.
func (c *Cluster) env() ([]string, error) {
	if c.cfg.clockOffset == 0 {
		return nil, nil
	}
	if _, err := os.Stat(libFaketime); err != nil {
		return nil, fmt.Errorf("%w: libfaketime (WithClockOffset): %v", ErrNotInstalled, err)
	}
	return append(os.Environ(), "LD_PRELOAD="+libFaketime,
		fmt.Sprintf("FAKETIME=%+.3f", c.cfg.clockOffset.Seconds())), nil
}
