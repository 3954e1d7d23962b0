//go:build !linux

package zkserver

import (
	"os"
	"os/exec"
)

func setProcAttrs(cmd *exec.Cmd) {}

func terminate(cmd *exec.Cmd, kill bool) {
	if kill {
		_ = cmd.Process.Kill()
		return
	}
	_ = cmd.Process.Signal(os.Interrupt)
}
