//go:build unix

package hostexec

import (
	"os/exec"
	"syscall"
)

// chroot makes cmd start inside root. It keeps what the caller set in
// SysProcAttr before or sets after (a process group).
func chroot(cmd *exec.Cmd, root string) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Chroot = root
	return nil
}
