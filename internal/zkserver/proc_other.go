//go:build !linux

package zkserver

import (
	"errors"
	"os"
	"os/exec"
	"time"
)

func setProcAttrs(cmd *exec.Cmd) {}

func terminate(cmd *exec.Cmd, kill bool) {
	if kill {
		_ = cmd.Process.Kill()
		return
	}
	_ = cmd.Process.Signal(os.Interrupt)
}

// processCPU needs /proc.
func processCPU(int) (time.Duration, error) {
	return 0, errors.New("process CPU time is read from /proc, Linux only")
}
