//go:build unix && !linux

package conformancetest

import "syscall"

// sysProcAttr: only Linux has a parent-death signal.
func sysProcAttr() *syscall.SysProcAttr { return nil }
