package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/machina-io/machina/internal/process"
)

// This file runs real processes for the end-to-end test: it builds the
// binaries and starts, kills and stops them.

// repoRoot is the directory above the working directory that holds go.work.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "no go.work above the working directory")
		dir = parent
	}
}

// goBuild builds the main package pkg of the module in moduleDir into dir
// and returns the binary's path. Building from the module's own directory
// works with and without the workspace.
func goBuild(t *testing.T, moduleDir, pkg, dir, name string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = moduleDir
	output, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %s:\n%s", pkg, output)
	return out
}

// buildBinaries builds machina-manager and machina-driver-inmemory into a
// temporary directory and returns their paths.
func buildBinaries(t *testing.T) (managerBin, driverBin string) {
	t.Helper()
	root := repoRoot(t)
	bin := t.TempDir()
	managerBin = goBuild(t, filepath.Join(root, "cmd"), "./machina-manager", bin, "machina-manager")
	driverBin = goBuild(t, filepath.Join(root, "drivers", "inmemory"), "./cmd/machina-driver-inmemory", bin, "machina-driver-inmemory")
	return managerBin, driverBin
}

// startDriver runs the inmemory driver serving socket, with args, and
// waits up to 30s for the socket to appear.
func startDriver(t *testing.T, driverBin, socket string, args ...string) *child {
	t.Helper()
	p := start(t, "driver", driverBin, append([]string{"--endpoint=unix://" + socket}, args...)...)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.NoError(t, waitFile(ctx, socket))
	return p
}

// managerFlags are the flags of a manager with leader election, working in
// namespace against the API server of kubeconfig and the driver at
// endpoint, serving metrics (plain HTTP: these tests scrape without a
// token; TestEndpoints covers the default HTTPS) and probes on metricsAddr
// and healthAddr, followed by more.
func managerFlags(kubeconfig, namespace, endpoint, metricsAddr, healthAddr string, more ...string) []string {
	return append([]string{
		"--control-kubeconfig=" + kubeconfig,
		"--namespace=" + namespace,
		"--driver-endpoint=" + endpoint,
		"--metrics-bind-address=" + metricsAddr,
		"--metrics-secure=false",
		"--health-probe-bind-address=" + healthAddr,
		"--leader-elect=true",
	}, more...)
}

// child is a started binary whose output goes to log, shown when the test
// fails.
type child struct {
	*process.Process
	log *process.Buffer
}

// start runs binary with args. When the test ends the process is stopped
// (SIGTERM, then SIGKILL after 10s) and, if the test failed, the tail of
// its output is logged.
func start(t *testing.T, name, binary string, args ...string) *child {
	t.Helper()
	c := &child{log: &process.Buffer{}}
	var err error
	c.Process, err = process.Start(process.Config{Name: name, Path: binary, Args: args, Output: c.log})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.Stop(10 * time.Second)
		if t.Failed() {
			t.Logf("---- %s output (tail) ----\n%s", name, c.Tail(120))
		}
	})
	return c
}

// stop sends SIGTERM, waits up to grace, then kills. It returns how the
// process ended (nil for exit code 0) and whether it stopped within grace.
func (c *child) stop(grace time.Duration) (error, bool) {
	killed := c.Stop(grace) != nil
	return c.Err(), !killed
}

// socketDir returns a short temporary directory for Unix sockets:
// t.TempDir() can exceed the 108-byte limit of a socket path.
func socketDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "m")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// freeAddress returns a loopback address with a port that was free a
// moment ago.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// waitFile waits until path exists, e.g. a socket a process creates.
func waitFile(ctx context.Context, path string) error {
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s never appeared: %w", path, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
