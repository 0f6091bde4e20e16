package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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

// process is a child process whose output goes to a log buffer, shown when
// the test fails.
type process struct {
	name string
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
	err  error // valid once done is closed
}

// syncBuffer is a bytes.Buffer safe for the process's two output streams.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// start runs binary with args. When the test ends the process is stopped
// (SIGTERM, then SIGKILL) and, if the test failed, the tail of its output
// is logged.
func start(t *testing.T, name, binary string, args ...string) *process {
	t.Helper()
	p := &process{name: name, log: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Stdout = p.log
	p.cmd.Stderr = p.log
	require.NoError(t, p.cmd.Start(), "starting %s", name)
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop(10 * time.Second)
		if t.Failed() {
			t.Logf("---- %s output (tail) ----\n%s", name, tail(p.log.String(), 120))
		}
	})
	return p
}

// running reports whether the process has not exited.
func (p *process) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the exit.
func (p *process) kill() {
	if p.running() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.done
}

// stop sends SIGTERM, waits up to grace, then kills. It returns the exit
// error (nil for exit code 0) and whether the process stopped within grace.
func (p *process) stop(grace time.Duration) (error, bool) {
	if !p.running() {
		return p.err, true
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err, true
	case <-time.After(grace):
		p.kill()
		return p.err, false
	}
}

// exitCode is the process's exit code once it has exited.
func (p *process) exitCode() int {
	var exitErr *exec.ExitError
	if errors.As(p.err, &exitErr) {
		return exitErr.ExitCode()
	}
	if p.err != nil {
		return -1
	}
	return 0
}

func tail(s string, lines int) string {
	all := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
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
