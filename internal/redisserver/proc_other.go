//go:build !linux

package redisserver

import (
	"os"
	"os/exec"
)

func setProcAttrs(*exec.Cmd) {}

// terminate sends the server an interrupt, or kills it if kill.
func terminate(cmd *exec.Cmd, kill bool) {
	if kill {
		_ = cmd.Process.Kill()
		return
	}
	_ = cmd.Process.Signal(os.Interrupt)
}
