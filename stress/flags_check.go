package main

import (
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/tierlock/tierlock/stress/internal/runner"
)

// windowFlags checks -warmup and -probe. A run with faults or a quota of
// acquisitions is measured whole: it has no warm-up.
func windowFlags(c *runner.Config, set map[string]bool) error {
	switch {
	case c.Warmup < 0:
		return usageErr("-warmup must not be negative, got %v", c.Warmup)
	case c.Probe < 0:
		return usageErr("-probe must not be negative, got %v", c.Probe)
	case set["warmup"] && c.Faults != nil:
		return usageErr("-warmup does not go with -fault: a run with faults is measured whole")
	case set["warmup"] && set["acquisitions"]:
		return usageErr("-warmup does not go with -acquisitions: a run of a number of acquisitions is measured whole")
	}
	if !c.Windowed() {
		c.Warmup = 0
	}
	return nil
}

// metricsFlag checks -metrics: a host and a port from which there are
// procs ports (port 0 is refused: the workers could not be found).
func metricsFlag(v string, procs int) error {
	if v == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return usageErr("-metrics: %v", err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p+procs-1 > 65535 {
		return usageErr("-metrics: port %q: want 1 to %d (the workers take port to port+%d)", port, 65535-(procs-1), procs-1)
	}
	if host == "" {
		return usageErr("-metrics: %q has no host (127.0.0.1:9100, say)", v)
	}
	return nil
}

// checkWritable makes sure an output file can be written before a long run
// starts. A file that did not exist is removed again.
func checkWritable(path string) error {
	if path == "" {
		return nil
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	f.Close()
	if os.IsNotExist(statErr) {
		os.Remove(path)
	}
	return nil
}
