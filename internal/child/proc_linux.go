package child

import (
	"os/exec"
	"syscall"
)

// setProcAttrs asks the kernel to SIGKILL a child when its parent dies, so
// that an interrupted or crashed run leaves no child behind.
func setProcAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
