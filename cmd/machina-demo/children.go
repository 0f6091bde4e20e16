package main

import (
	"os"
	"strings"

	"github.com/machina-io/machina/internal/process"
)

// startChild starts the manager or the driver: path with args, its stdout
// and stderr going to logPath. The child has a process group of its own (a
// Ctrl-C in the terminal reaches only the demo, which stops the children in
// order; stopping signals the whole group) and is killed when the demo dies.
func startChild(name, path, logPath string, args ...string) (*process.Process, error) {
	return process.Start(process.Config{Name: name, Path: path, Args: args, Env: childEnv(), LogPath: logPath, Group: true})
}

// childEnv is the demo's environment without the variables meant for the
// control plane wrappers.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, realAssetsEnv+"=") && !strings.HasPrefix(kv, demoPIDEnv+"=") {
			env = append(env, kv)
		}
	}
	return env
}
