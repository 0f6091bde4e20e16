package chaos

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/machina-io/machina/internal/process"
)

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
	current *process.Process
	// exits counts runs that ended without the suite asking; kills and
	// starts count the suite's SIGKILLs and every start.
	exits, kills, starts int
	// lastExit describes the last unexpected exit, for messages.
	lastExit string
	// killed is the run the suite killed last; its exit is not counted.
	killed  *process.Process
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
	// Every run appends to the component's log, after the line above. Its
	// own process group: a SIGKILL reaches a driver's children too.
	p, err := process.Start(process.Config{Name: c.name, Path: c.path, Args: c.args, LogPath: c.logPath, AppendLog: true, Group: true})
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
		case <-p.Exited():
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
		c.lastExit = fmt.Sprintf("%v after %s", p.Err(), time.Since(startedAt).Round(time.Second))
		c.mu.Unlock()
		if time.Since(startedAt) > minHealthyRun {
			backoff = firstBackoff
		}
		fmt.Fprintf(c.log, "---- chaos: %s exited by itself (%v); restarting in %s ----\n", c.name, p.Err(), backoff)
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
	fmt.Fprintf(c.log, "---- chaos: SIGKILL to %s (pid %d) at %s ----\n", c.name, p.Pid(), time.Now().UTC().Format(time.RFC3339Nano))
	p.Kill()
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
	err := p.Stop(grace)
	_ = c.log.Close()
	return err
}

// tail returns the last n lines of the component's log, of all its runs.
func (c *component) tail(n int) string {
	return process.Tail(c.logPath, n)
}
