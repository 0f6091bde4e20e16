//go:build !unix

package main

import (
	"os"
	"os/exec"
)

// ownProcessGroup asks the command to stop on cancel; without Unix process
// groups, programs it started are not reached.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
}
