package conformancetest

import "syscall"

// sysProcAttr gives the child a parent-death signal: no driver outlives the
// test that started it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
