package chaos

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// process is one run of a manager or driver binary, its output appended to
// a log file shared by all runs of the same component.
type process struct {
	cmd *exec.Cmd
	// exited is closed when the process has exited; err is then its result.
	exited chan struct{}
	err    error
}

// startProcess starts path with args, stdout and stderr appended to log.
// The process gets its own process group and is killed when the suite dies
// (parent-death signal), so nothing outlives an interrupted run.
func startProcess(path string, log *os.File, args ...string) (*process, error) {
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the exit.
func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// stop sends SIGTERM and waits up to grace, then SIGKILL. It reports a
// process that had to be killed.
func (p *process) stop(grace time.Duration) error {
	if !p.running() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(grace):
	}
	p.kill()
	return fmt.Errorf("pid %d did not stop within %s of SIGTERM and was killed", p.cmd.Process.Pid, grace)
}

// component is the manager or the driver: a binary that the suite kills
// and restarts, and that a supervisor restarts when it exits by itself, as
// the kubelet restarts a container (with a doubling back-off, so that a
// crash loop shows as a count of exits rather than hiding). Every run
// appends to one log file.
type component struct {
	name, path string
	args       []string
	logPath    string
	log        *os.File

	// startMu makes a kill and restart by the suite and a restart by the
	// supervisor exclusive.
	startMu sync.Mutex
	mu      sync.Mutex
	current *process
	// exits counts runs that ended without the suite asking; kills and
	// starts count the suite's SIGKILLs and every start.
	exits, kills, starts int
	// lastExit describes the last unexpected exit, for messages.
	lastExit string
	// killed is the run the suite killed last; its exit is not counted.
	killed  *process
	stopped bool
	done    chan struct{}
	// changed is signalled when a new run starts or supervision stops.
	changed *sync.Cond
}

// Back-off of the supervisor after an unexpected exit: 1s, 2s, 4s, ... up
// to maxBackoff, reset after a run that lasted minHealthyRun.
const (
	firstBackoff  = time.Second
	maxBackoff    = 16 * time.Second
	minHealthyRun = 30 * time.Second
)

// startComponent starts the first run and its supervisor.
func startComponent(name, path, logPath string, args ...string) (*component, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	c := &component{name: name, path: path, args: args, logPath: logPath, log: log, done: make(chan struct{})}
	c.changed = sync.NewCond(&c.mu)
	if err := c.start(); err != nil {
		return nil, err
	}
	go c.supervise()
	return c, nil
}

func (c *component) start() error {
	fmt.Fprintf(c.log, "---- chaos: starting %s at %s ----\n", c.name, time.Now().UTC().Format(time.RFC3339Nano))
	p, err := startProcess(c.path, c.log, c.args...)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.current = p
	c.starts++
	c.changed.Broadcast()
	c.mu.Unlock()
	return nil
}

// supervise restarts a run that exited by itself.
func (c *component) supervise() {
	backoff := firstBackoff
	for {
		c.mu.Lock()
		p := c.current
		c.mu.Unlock()
		startedAt := time.Now()
		select {
		case <-c.done:
			return
		case <-p.exited:
		}
		c.mu.Lock()
		if c.stopped {
			c.mu.Unlock()
			return
		}
		if c.killed == p {
			// The suite killed it and starts the next run: wait for that
			// run, this exit is not the process's own.
			for c.current == p && !c.stopped {
				c.changed.Wait()
			}
			c.mu.Unlock()
			continue
		}
		c.exits++
		c.lastExit = fmt.Sprintf("%v after %s", p.err, time.Since(startedAt).Round(time.Second))
		c.mu.Unlock()
		if time.Since(startedAt) > minHealthyRun {
			backoff = firstBackoff
		}
		fmt.Fprintf(c.log, "---- chaos: %s exited by itself (%v); restarting in %s ----\n", c.name, p.err, backoff)
		select {
		case <-c.done:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
		c.startMu.Lock()
		c.mu.Lock()
		stopped, restarted := c.stopped, c.current != p
		c.mu.Unlock()
		var err error
		if !stopped && !restarted { // else the suite stopped it or started a run during the back-off
			err = c.start()
		}
		c.startMu.Unlock()
		if stopped {
			return
		}
		if err != nil {
			fmt.Fprintf(c.log, "---- chaos: restarting %s: %v ----\n", c.name, err)
			return
		}
	}
}

// killAndRestart kills the running process with SIGKILL and starts a new
// one at once, as a node failure followed by a reschedule.
func (c *component) killAndRestart() error {
	c.startMu.Lock()
	defer c.startMu.Unlock()
	c.mu.Lock()
	p := c.current
	c.kills++
	c.killed = p
	c.mu.Unlock()
	fmt.Fprintf(c.log, "---- chaos: SIGKILL to %s (pid %d) at %s ----\n", c.name, p.cmd.Process.Pid, time.Now().UTC().Format(time.RFC3339Nano))
	// Kill the whole process group: a driver may have children.
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
	return c.start()
}

// counts returns the unexpected exits and the suite's kills so far.
func (c *component) counts() (exits, kills int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exits, c.kills
}

// stop ends supervision and stops the running process.
func (c *component) stop(grace time.Duration) error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil
	}
	c.stopped = true
	p := c.current
	c.changed.Broadcast()
	c.mu.Unlock()
	close(c.done)
	err := p.stop(grace)
	_ = c.log.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	return nil
}

// tail returns the last n lines of the component's log.
func (c *component) tail(n int) string {
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
