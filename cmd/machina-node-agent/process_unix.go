//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup puts the apply command into a process group of its own
// and makes a cancel signal the whole group, so that the programs a shell
// script starts stop with it. It keeps a chroot already set.
func ownProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
}
