//go:build !linux

package e2e

import "syscall"

// parentDeathAttr has nothing to set where the kernel offers no
// parent-death signal; the test's cleanup stops the processes.
func parentDeathAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{}
}
