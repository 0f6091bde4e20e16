// Package process runs the project's binaries as child processes for the
// programs and tests that drive them (the end-to-end tests, the fault
// suite, the demo and the benchmark): start with the output in a log file
// (or, for a test that reads it while the child runs, in a Buffer), wait
// for readiness, stop with SIGTERM and then SIGKILL after a deadline, kill
// with SIGKILL, read the output's last lines when something went wrong.
//
// Every child gets a parent-death signal (on Linux): the kernel kills it
// when the parent dies however it dies (a panic, go test's -timeout, a
// SIGKILL), when no cleanup code runs, so that no manager or driver
// outlives the run that started it. The kernel ties that signal to the
// thread that started the child; Go keeps its threads for the life of the
// process unless a goroutine exits while locked to one, which the users of
// this package do not do.
package process

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Config says what to start and how.
type Config struct {
	// Name names the process in messages ("machina-manager").
	Name string
	// Path is the binary; Args its arguments.
	Path string
	Args []string
	// Env is the environment; nil means the parent's.
	Env []string
	// LogPath is the file that receives stdout and stderr. It is truncated
	// unless AppendLog is set (one log for all runs of a component).
	LogPath   string
	AppendLog bool
	// Output, when set, receives stdout and stderr instead of a log file
	// (LogPath is then unused): for a test that reads what the child
	// printed while it runs.
	Output *Buffer
	// Group starts the process in a process group of its own: Stop and
	// Kill then signal the whole group (a driver's children too), and a
	// Ctrl-C in the terminal reaches only the parent, which stops its
	// children in the order it chooses. Without it the child stays in the
	// parent's group and a Ctrl-C stops it as well.
	Group bool
}

// Process is a started child. Its methods are safe for concurrent use.
type Process struct {
	cfg Config
	cmd *exec.Cmd
	// exited is closed once the process has exited and been reaped; err is
	// then the result of its Wait.
	exited chan struct{}
	err    error
}

// Start starts the process described by cfg and reaps it when it exits.
func Start(cfg Config) (*Process, error) {
	if cfg.Output != nil {
		cmd := command(cfg)
		cmd.Stdout, cmd.Stderr = cfg.Output, cfg.Output
		// The output is copied by goroutines that end when the pipe
		// closes; a grandchild that keeps it open must not keep Wait (and
		// so Stop and Kill) from returning once the child has exited.
		cmd.WaitDelay = 5 * time.Second
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("starting %s: %w", cfg.Name, err)
		}
		return reap(cfg, cmd), nil
	}
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if cfg.AppendLog {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	log, err := os.OpenFile(cfg.LogPath, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", cfg.Name, err)
	}
	cmd := command(cfg)
	// An *os.File is handed to the child as its descriptor, with no copying
	// goroutine: the parent's copy can be closed as soon as the child runs.
	cmd.Stdout, cmd.Stderr = log, log
	err = cmd.Start()
	if cerr := log.Close(); err == nil && cerr != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", cfg.Name, err)
	}
	return reap(cfg, cmd), nil
}

// command is the unstarted command of cfg, without its output.
func command(cfg Config) *exec.Cmd {
	cmd := exec.Command(cfg.Path, cfg.Args...)
	cmd.Env = cfg.Env
	cmd.SysProcAttr = sysProcAttr(cfg.Group)
	return cmd
}

// reap waits for the started cmd in the background.
func reap(cfg Config, cmd *exec.Cmd) *Process {
	p := &Process{cfg: cfg, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p
}

// Name is the process's name from its Config.
func (p *Process) Name() string { return p.cfg.Name }

// LogPath is the file that holds the process's output ("" with Output).
func (p *Process) LogPath() string { return p.cfg.LogPath }

// outputName names where the output went, for messages.
func (p *Process) outputName() string {
	if p.cfg.Output != nil {
		return "its output"
	}
	return p.cfg.LogPath
}

// Pid is the process's id (with Group, also its process group's id).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Running reports whether the process has not exited.
func (p *Process) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Err is how the process ended (nil for exit code 0) once it has exited,
// nil before.
func (p *Process) Err() error {
	select {
	case <-p.exited:
		return p.err
	default:
		return nil
	}
}

// ExitCode is the exit code once the process has exited: -1 for a process
// ended by a signal or not exited yet.
func (p *Process) ExitCode() int {
	if p.Running() {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// ExitError describes a process that exited before it was told to, with
// the last lines of its log.
func (p *Process) ExitError(lines int) error {
	return fmt.Errorf("%s exited unexpectedly (%v); last lines of %s:\n%s", p.cfg.Name, p.Err(), p.outputName(), p.Tail(lines))
}

// Kill sends SIGKILL (to the group with Group) and waits until the process
// has exited: the fault injection of a node that dies.
func (p *Process) Kill() {
	p.Signal(syscall.SIGKILL)
	<-p.exited
}

// Stop sends SIGTERM (to the group with Group) and waits up to grace for
// the process to exit, then sends SIGKILL and waits. It returns an error
// for a process that had to be killed; a process that had exited already
// stops without error.
func (p *Process) Stop(grace time.Duration) error {
	if !p.Running() {
		return nil
	}
	p.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
		return nil
	case <-t.C:
	}
	p.Kill()
	return fmt.Errorf("%s (pid %d) did not stop within %s of SIGTERM and was killed", p.cfg.Name, p.Pid(), grace)
}

// Signal sends sig to the process, or to its group with Group, without
// waiting: a SIGTERM whose effect a test watches, a SIGQUIT for a Go
// child's goroutine dump. A process that has exited is not signalled: its
// pid may belong to another by now.
func (p *Process) Signal(sig syscall.Signal) {
	if !p.Running() {
		return
	}
	pid := p.Pid()
	if p.cfg.Group {
		pid = -pid
	}
	// An error means the process is gone already (ESRCH): the wait that
	// follows returns at once.
	_ = syscall.Kill(pid, sig)
}

// Tail returns the last n lines of the process's log (or Output), each
// indented by four spaces so that they stand out in a message.
func (p *Process) Tail(n int) string {
	if p.cfg.Output != nil {
		return tailLines([]byte(p.cfg.Output.String()), n)
	}
	return Tail(p.cfg.LogPath, n)
}

// Tail returns the last n lines of the file at path, indented by four
// spaces, or the error that kept it from being read.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "    (" + err.Error() + ")"
	}
	return tailLines(data, n)
}

// tailLines returns the last n lines of data, indented by four spaces.
func tailLines(data []byte, n int) string {
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + string(bytes.Join(lines, []byte("\n    ")))
}
