package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/machina-io/machina/internal/process"
	"github.com/stretchr/testify/require"
)

// This file builds the binaries under test and runs them as child
// processes whose output goes to log files.

// binary is a main package of the repository to build: the module
// directory (relative to the repository root) and the package in it.
type binary struct {
	name, module, pkg string
}

var (
	managerBinary = binary{name: "machina-manager", module: "cmd", pkg: "./machina-manager"}
	driverBinary  = binary{name: "machina-driver-virtualnode", module: "drivers/virtualnode", pkg: "./cmd/machina-driver-virtualnode"}
)

// buildBinaries builds bins into dir, concurrently, and returns their paths
// by name. Each is built from its own module directory so that the build
// sees the same go.work and go.mod as `make build`.
func buildBinaries(ctx context.Context, root, dir string, bins ...binary) (map[string]string, error) {
	paths := make(map[string]string, len(bins))
	errs := make([]error, len(bins))
	var wg sync.WaitGroup
	for i, b := range bins {
		out := filepath.Join(dir, b.name)
		paths[b.name] = out
		wg.Go(func() {
			cmd := exec.CommandContext(ctx, "go", "build", "-o", out, b.pkg)
			cmd.Dir = filepath.Join(root, b.module)
			if output, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("go build %s (in %s): %w\n%s", b.pkg, b.module, err, output)
			}
		})
	}
	wg.Wait()
	return paths, errors.Join(errs...)
}

// startProcess starts path with args, stdout and stderr in
// logDir/<name>.log. The process is stopped when the test ends, passed or
// failed; with a failed test the tail of its log is printed. It stays in the
// test's process group, so a Ctrl-C in the terminal stops it gracefully too;
// the kernel kills it when the test binary dies without cleaning up (the
// package process's parent-death signal).
func startProcess(t *testing.T, name, path, logDir string, args ...string) *process.Process {
	t.Helper()
	p, err := process.Start(process.Config{Name: name, Path: path, Args: args, LogPath: filepath.Join(logDir, name+".log")})
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := p.Stop(15 * time.Second); err != nil {
			t.Errorf("%v", err)
		}
		if t.Failed() {
			t.Logf("---- last lines of %s (%s) ----\n%s", name, p.LogPath(), p.Tail(tailLines(name)))
		}
	})
	return p
}

// tailLines is how much of a log a failure shows: the manager's log says
// most about a failed scenario.
func tailLines(name string) int {
	if name == managerBinary.name {
		return 200
	}
	return 30
}
