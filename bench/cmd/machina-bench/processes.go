package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// child is the manager or the driver, a real process with its output in a
// log file.
type child struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	log     *os.File
	exited  chan struct{}
	err     error
}

// startChild starts path with args, its output going to logPath. The child
// gets its own process group (stop signals it as a whole) and is killed
// when the benchmark dies.
func startChild(name, path, logPath string, args ...string) (*child, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
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

func (c *child) pid() int { return c.cmd.Process.Pid }

// check fails when the process has exited.
func (c *child) check() error {
	select {
	case <-c.exited:
		return fmt.Errorf("%s exited unexpectedly (%v); last lines of %s:\n%s", c.name, c.err, c.logPath, c.tail(20))
	default:
		return nil
	}
}

// stop sends SIGTERM to the process group and waits; after grace, SIGKILL.
func (c *child) stop(grace time.Duration) error {
	defer c.log.Close()
	select {
	case <-c.exited:
		return nil
	default:
	}
	_ = syscall.Kill(-c.pid(), syscall.SIGTERM)
	select {
	case <-c.exited:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-c.pid(), syscall.SIGKILL)
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

// waitHTTP waits until url answers 200, failing when c exits or timeout
// passes.
func waitHTTP(ctx context.Context, c *child, url string, timeout time.Duration) error {
	httpClient := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	for {
		if err := c.check(); err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := httpClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer 200 on %s within %s; last lines of its log:\n%s", c.name, url, timeout, c.tail(20))
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// freeAddress returns a loopback address with a port that is free now.
func freeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
