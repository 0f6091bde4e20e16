//go:build !unix

package conformance

import "os/exec"

// The launcher mode needs Unix sockets and signals; elsewhere the library
// builds, and a launched driver is killed alone.

func ownProcessGroup(*exec.Cmd) {}

func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
