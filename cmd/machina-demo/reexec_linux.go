package main

import (
	"os"
	"runtime"
	"strconv"
	"syscall"
)

// The kernel kills a child whose parent-death signal is set when the parent
// goes, however the parent goes: a panic, SIGKILL or an OOM kill included.
// Every process the demo starts gets it (the manager and the driver through
// the package process), so that a demo never leaves an API server, etcd,
// manager or driver running behind.

// execAsset runs when the demo binary was started under the name of a
// control plane binary (envtest starts etcd and kube-apiserver through
// symlinks to the demo, see assetLinks; envtest offers no way to set the
// parent-death signal itself). It sets the signal and replaces itself with
// the real binary. It returns only when this process is not such a wrapper.
func execAsset() {
	real := os.Getenv(realAssetsEnv)
	name := assetName(os.Args[0])
	if real == "" || name == "" {
		return
	}
	// The parent-death signal belongs to the calling thread and survives
	// execve, which must therefore run on the same thread.
	runtime.LockOSThread()
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0); errno != 0 {
		fatalf("%s: setting the parent-death signal: %v", name, errno)
	}
	// The demo may have died between the fork and the prctl above.
	if strconv.Itoa(os.Getppid()) != os.Getenv(demoPIDEnv) {
		os.Exit(1)
	}
	path := real + string(os.PathSeparator) + name
	err := syscall.Exec(path, append([]string{path}, os.Args[1:]...), os.Environ())
	fatalf("%s: exec %s: %v", name, path, err)
}
