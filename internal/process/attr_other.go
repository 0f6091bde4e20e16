//go:build unix && !linux

package process

import "syscall"

// sysProcAttr sets a process group of the child's own with group. Outside
// Linux there is no parent-death signal: children are stopped by their
// parent's cleanup only.
func sysProcAttr(group bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: group}
}
