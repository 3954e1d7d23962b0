package main

import (
	"os/exec"
	"syscall"
)

// setProcAttrs asks the kernel to SIGKILL a worker when the stress process
// dies, so that an interrupted or crashed run leaves no worker behind.
func setProcAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
