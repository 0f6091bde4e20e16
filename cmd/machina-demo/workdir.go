package main

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// workDirPrefix names the demo's temporary directories. The directory
// holds the socket, kubeconfigs, logs and the API server's data; it is
// short because a Unix socket path is limited to 107 bytes.
const workDirPrefix = "machina-demo-"

// pidFile in a work directory holds the process ID of the demo that owns it.
const pidFile = "demo.pid"

// newWorkDir creates the demo's work directory after removing those of
// earlier demos that are no longer running (a demo killed with SIGKILL
// cannot clean up after itself; its processes died with it).
func newWorkDir() (string, error) {
	removeStaleWorkDirs(os.TempDir())
	dir, err := os.MkdirTemp("", workDirPrefix)
	if err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, pidFile), []byte(strconv.Itoa(os.Getpid())), 0o600)
}

// removeStaleWorkDirs removes the work directories in tmp whose demo
// process is gone. A directory without a readable pid file is left alone:
// it may belong to a demo that is just starting.
func removeStaleWorkDirs(tmp string) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), workDirPrefix) {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		data, err := os.ReadFile(filepath.Join(dir, pidFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 0 || processAlive(pid) {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}

// processAlive tells whether a process with that ID exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
