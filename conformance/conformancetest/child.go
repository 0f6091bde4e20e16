package conformancetest

import (
	"bytes"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// child is a program started by the kit, its stdout and stderr in a
// Buffer. The conformance module is what driver authors import, so the kit
// runs its processes with os/exec alone rather than with a helper module of
// machina's own. Its methods are safe for concurrent use.
type child struct {
	name string
	cmd  *exec.Cmd
	// exited is closed once the process has exited and been reaped; err is
	// then the result of its Wait.
	exited chan struct{}
	err    error
}

// startChild starts path with args and env, its output into out, and reaps
// it when it exits. On Linux the kernel kills it when the test process
// dies, however it dies (a panic, go test's -timeout).
func startChild(name, path string, args, env []string, out *Buffer) (*child, error) {
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	// The output is copied by goroutines that end when the pipe closes; a
	// grandchild holding it open must not keep Wait from returning.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, exited: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// Pid is the process's id.
func (c *child) Pid() int { return c.cmd.Process.Pid }

// Exited is closed once the process has exited.
func (c *child) Exited() <-chan struct{} { return c.exited }

// Running reports whether the process has not exited yet.
func (c *child) Running() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// Err is the result of the process's Wait, nil while it runs.
func (c *child) Err() error {
	if c.Running() {
		return nil
	}
	return c.err
}

// ExitCode is the exit status, -1 while it runs or when a signal ended it.
func (c *child) ExitCode() int {
	if c.Running() {
		return -1
	}
	return c.cmd.ProcessState.ExitCode()
}

// Signal sends sig without waiting. A process that has exited is not
// signalled: its pid may belong to another by now.
func (c *child) Signal(sig syscall.Signal) {
	if c.Running() {
		// An error means it is gone already (ESRCH).
		_ = syscall.Kill(c.Pid(), sig)
	}
}

// Kill sends SIGKILL and waits until the process has exited.
func (c *child) Kill() {
	c.Signal(syscall.SIGKILL)
	<-c.exited
}

// Stop sends SIGTERM and waits up to grace, then kills the process. It
// returns an error for a process that had to be killed.
func (c *child) Stop(grace time.Duration) error {
	if !c.Running() {
		return nil
	}
	c.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.exited:
		return nil
	case <-t.C:
	}
	c.Kill()
	return fmt.Errorf("%s (pid %d) did not stop within %s of SIGTERM and was killed", c.name, c.Pid(), grace)
}

// Buffer holds a child's output: the child writes it while a test reads it.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
