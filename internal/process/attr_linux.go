package process

import "syscall"

// sysProcAttr sets the parent-death signal, and a process group of the
// child's own with group.
func sysProcAttr(group bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: group, Pdeathsig: syscall.SIGKILL}
}
