package e2e

import "syscall"

// parentDeathAttr makes the kernel send SIGKILL to a child when the test
// binary dies, however it dies (a panic in a test's goroutine, go test's
// -timeout, SIGKILL): the cleanup functions that stop the processes do not
// run then, and a manager or driver left behind would outlive the test. The
// kernel ties the signal to the thread that started the child; Go keeps its
// threads for the life of the process unless a goroutine exits while locked
// to one, which nothing here does. The child stays in the test's process
// group, so a Ctrl-C in the terminal stops it gracefully too.
func parentDeathAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
