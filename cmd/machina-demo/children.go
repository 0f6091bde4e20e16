package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// child is a manager or driver process with its output in a log file.
type child struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	log     *os.File
	// exited is closed when the process has exited; err is then its
	// result.
	exited chan struct{}
	err    error
}

// startChild starts path with args, its stdout and stderr going to logPath.
func startChild(name, path, logPath string, args ...string) (*child, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = childEnv()
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("starting %s: %w", name, err), log.Close())
	}
	c := &child{name: name, cmd: cmd, logPath: logPath, log: log, exited: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
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

// running tells whether the process has not exited yet.
func (c *child) running() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// exitError describes how the process ended, for a process that ended
// before it was told to.
func (c *child) exitError() error {
	return fmt.Errorf("%s exited unexpectedly (%v); last lines of %s:\n%s", c.name, c.err, c.logPath, c.tail(25))
}

// stop sends SIGTERM to the process group and waits for the process to
// exit; after grace it sends SIGKILL. It returns the process's error unless
// the process stopped because of the demo's signal.
func (c *child) stop(grace time.Duration) error {
	defer c.log.Close()
	if !c.running() {
		return nil
	}
	pgid := -c.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-c.exited:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(pgid, syscall.SIGKILL)
	<-c.exited
	return fmt.Errorf("%s did not stop within %s of SIGTERM and was killed", c.name, grace)
}

// tail returns the last n lines of the process's log.
func (c *child) tail(n int) string {
	data, err := os.ReadFile(c.logPath)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + string(bytes.Join(lines, []byte("\n    ")))
}
