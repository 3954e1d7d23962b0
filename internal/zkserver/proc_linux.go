package zkserver

import (
	"os/exec"
	"syscall"
)

// setProcAttrs puts the server in its own process group and asks the kernel
// to SIGKILL it when the process that started it dies, so that a crashed or
// killed test binary leaves no server running.
func setProcAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func terminate(cmd *exec.Cmd, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	// Signal the whole group: the JVM is the leader of its own group.
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
