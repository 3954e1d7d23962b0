package redisserver

import (
	"os/exec"
	"syscall"
)

// setProcAttrs asks the kernel to SIGKILL the server when the process that
// started it dies, so that a test binary killed by its timeout leaves no
// redis-server running.
func setProcAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// terminate sends the server SIGTERM, or SIGKILL if kill, by its pid.
func terminate(cmd *exec.Cmd, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = cmd.Process.Signal(sig)
}
