//go:build unix && !linux

package main

import "syscall"

// childAttr puts a child in its own process group. Outside Linux there is no
// parent-death signal: children are stopped by the demo's cleanup only.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// execAsset does nothing outside Linux: envtest starts the real binaries.
func execAsset() {}
