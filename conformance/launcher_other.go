//go:build !unix

package conformance

import (
	"os"
	"os/exec"
)

// The launcher mode needs Unix sockets and signals; elsewhere the library
// builds, and a launched driver is killed alone.

func ownProcessGroup(*exec.Cmd) {}

func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }

func fileOwner(os.FileInfo) (uid, gid uint64, ok bool) { return 0, 0, false }
