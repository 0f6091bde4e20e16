//go:build unix

package conformance

import (
	"os"
	"os/exec"
	"syscall"
)

// ownProcessGroup starts cmd in a process group of its own, so that the
// final kill reaches what the driver started too.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills cmd's process group.
func killGroup(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

// fileOwner is the uid and gid of a file; ok is false where the system
// does not tell.
func fileOwner(fi os.FileInfo) (uid, gid uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return uint64(st.Uid), uint64(st.Gid), true
}
