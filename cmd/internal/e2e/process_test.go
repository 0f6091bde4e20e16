package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

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

// process is a running manager or driver.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	// exited is closed once the process has exited; err is then its
	// result.
	exited chan struct{}
	err    error
}

// startProcess starts path with args, stdout and stderr appended to
// logDir/<name>.log. The process is stopped when the test ends, passed or
// failed; with a failed test the tail of its log is printed. The kernel also
// kills it when the test binary dies without cleaning up (parentDeathAttr).
func startProcess(t *testing.T, name, path, logDir string, args ...string) *process {
	t.Helper()
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = parentDeathAttr()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		require.NoError(t, err, "starting %s", name)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, logFile: logFile, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		if err := p.stop(15 * time.Second); err != nil {
			t.Errorf("%v", err)
		}
		if t.Failed() {
			t.Logf("---- last lines of %s (%s) ----\n%s", name, logPath, p.tail(p.tailLines()))
		}
	})
	return p
}

// tailLines is how much of a log a failure shows: the manager's log says
// most about a failed scenario.
func (p *process) tailLines() int {
	if p.name == managerBinary.name {
		return 200
	}
	return 30
}

// running reports whether the process has not exited.
func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// exitError describes a process that exited before the test stopped it.
func (p *process) exitError() error {
	return fmt.Errorf("%s exited unexpectedly (%v); last lines of %s:\n%s", p.name, p.err, p.logPath, p.tail(40))
}

// stop sends SIGTERM and waits up to grace for a graceful exit, then
// SIGKILL. It reports a process that had to be killed.
func (p *process) stop(grace time.Duration) error {
	defer func() { _ = p.logFile.Close() }()
	if !p.running() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	return fmt.Errorf("%s did not stop within %s of SIGTERM and was killed", p.name, grace)
}

// tail returns the last n lines of the process's log.
func (p *process) tail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
