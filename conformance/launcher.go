package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// Launch configures the launcher mode (Config.Launch): the suite starts the
// driver itself, as the core's pod would, and so can check the §2 rules of
// the Driver API that only a launch shows: where the driver listens, what it
// does with the file already at its path, the modes of the directory and the
// socket, and how it stops and starts again.
type Launch struct {
	// Command starts the driver: a program and its arguments, with
	// environment assignments before it if needed (VAR=value prog --flag).
	// The suite runs it as
	//
	//	/bin/sh -c 'umask 022; exec env <Command> "$@"' machina-driver --endpoint unix:///...
	//
	// so it must be one simple command (no && or |), and the driver must
	// take --endpoint (§2.1). The suite sets or clears
	// MACHINA_DRIVER_ENDPOINT itself.
	Command string
	// StopTimeout is how long the driver may take to exit after SIGTERM,
	// the pod's termination grace period (§2.7). Default: 30s.
	StopTimeout time.Duration
	// DefaultEndpoint also starts the driver with neither --endpoint nor
	// MACHINA_DRIVER_ENDPOINT, where it must listen on
	// unix:///var/run/machina/driver.sock (§2.1). Off by default: that path
	// belongs to the machine, and a driver may already listen there (then
	// the suite leaves it alone).
	DefaultEndpoint bool
}

const (
	// DefaultStopTimeout is the pod's default termination grace period.
	DefaultStopTimeout = 30 * time.Second
	// defaultDriverEndpoint is §2.1's default endpoint.
	defaultDriverEndpoint = "unix:///var/run/machina/driver.sock"
	// endpointEnv is §2.1's environment variable.
	endpointEnv = "MACHINA_DRIVER_ENDPOINT"
	// launchPlaceholder stands for the endpoint of the driver RunT starts.
	launchPlaceholder = "unix:///launched/by/the/suite.sock"
)

func (l *Launch) validate() error {
	if strings.TrimSpace(l.Command) == "" {
		return errors.New("a Command is required")
	}
	if l.StopTimeout < 0 {
		return errors.New("StopTimeout must not be negative")
	}
	return nil
}

// launcher is the state of the launcher mode during a run.
type launcher struct {
	Launch
	dir   string        // a private directory for the sockets of the run
	ready time.Duration // how long a started driver may take to answer
	// sigtermIgnored is set once a driver outlived StopTimeout after
	// SIGTERM: the drivers that are not the subject of a check are then
	// killed at once, so that a run does not wait StopTimeout for each.
	sigtermIgnored atomic.Bool
}

// startLaunched starts the driver for the run's checks and returns the
// launcher and the driver's endpoint. The driver is stopped with SIGTERM
// when t's cleanups run.
func startLaunched(t T, cfg Config) (*launcher, string) {
	t.Helper()
	l := &launcher{Launch: *cfg.Launch, ready: cfg.Timeouts.withDefaults().Ready}
	if l.StopTimeout == 0 {
		l.StopTimeout = DefaultStopTimeout
	}
	// os.MkdirTemp, not a test directory: socket paths have at most 107
	// bytes (§2.2).
	dir, err := os.MkdirTemp("", "mconf")
	if err != nil {
		ruleIdentityOK.fatalf(t, "cannot create a directory for the driver's socket: %v", err)
	}
	l.dir = dir
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	endpoint := "unix://" + filepath.Join(dir, "driver.sock")
	p := l.start(t, []string{"--endpoint", endpoint}, "")
	t.Cleanup(func() { p.stop(l.StopTimeout) })
	if err := l.waitAnswer(p, endpoint); err != nil {
		ruleIdentityOK.fatalf(t, "the driver started with %q: %v", l.Command, err)
	}
	t.Logf("started the driver: %s --endpoint %s (pid %d)", l.Command, endpoint, p.cmd.Process.Pid)
	return l, endpoint
}

// newDir returns a new empty directory for one launch.
func (l *launcher) newDir(t T) string {
	dir, err := os.MkdirTemp(l.dir, "l")
	if err != nil {
		ruleIdentityOK.fatalf(t, "cannot create a directory for a socket: %v", err)
	}
	return dir
}

// process is a driver the suite started.
type process struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{} // closed when the process has exited
}

// start starts the driver with args after the command and, unless empty,
// endpointVar as MACHINA_DRIVER_ENDPOINT. The process is killed when t's
// cleanups run, if it still runs then.
func (l *launcher) start(t T, args []string, endpointVar string) *process {
	t.Helper()
	script := "umask 022; exec env " + l.Command + ` "$@"`
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, "machina-driver"}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, endpointEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if endpointVar != "" {
		cmd.Env = append(cmd.Env, endpointEnv+"="+endpointVar)
	}
	p := &process{cmd: cmd, out: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	ownProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		ruleIdentityOK.fatalf(t, "cannot start the driver %q: %v", l.Command, err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.kill)
	return p
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitCode is the exit status, -1 for a signal; valid once exited.
func (p *process) exitCode() int { return p.cmd.ProcessState.ExitCode() }

// waitExit waits up to timeout for the process to exit.
func (p *process) waitExit(timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return true
	case <-timer.C:
		return false
	}
}

// signal sends sig to the process (not to its group: Kubernetes signals a
// container's main process).
func (p *process) signal(sig syscall.Signal) { _ = p.cmd.Process.Signal(sig) }

// stop sends SIGTERM, waits up to timeout, then kills the process group. It
// reports whether the driver exited by itself.
func (p *process) stop(timeout time.Duration) bool {
	if p.exited() {
		return true
	}
	p.signal(syscall.SIGTERM)
	if p.waitExit(timeout) {
		return true
	}
	p.kill()
	return false
}

// kill ends the process group at once and waits for the process.
func (p *process) kill() {
	if !p.exited() {
		killGroup(p.cmd)
		<-p.done
	}
}

// tail is the end of the driver's output, for messages.
func (p *process) tail() string {
	s := strings.TrimSpace(p.out.String())
	const max = 1500
	if len(s) > max {
		s = "..." + s[len(s)-max:]
	}
	if s == "" {
		return "(no output)"
	}
	return "output:\n" + s
}

// outcome is what a started driver did first.
type outcome int

const (
	answered outcome = iota // it answered GetPluginInfo on the endpoint
	exited                  // it exited
	silent                  // neither, within the time allowed
)

// waitAnswerOrExit waits until the driver answers GetPluginInfo on
// endpoint, exits, or the launcher's ready timeout passes.
func (l *launcher) waitAnswerOrExit(p *process, endpoint string) outcome {
	conn, err := fastConn(endpoint)
	if err != nil {
		return silent
	}
	defer func() { _ = conn.Close() }()
	identity := driverv1alpha1.NewIdentityServiceClient(conn)
	deadline := time.Now().Add(l.ready)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := identity.GetPluginInfo(ctx, &driverv1alpha1.GetPluginInfoRequest{}, grpc.WaitForReady(false))
		cancel()
		switch {
		case err == nil:
			return answered
		case p.exited():
			return exited
		case time.Now().After(deadline):
			return silent
		}
		// Poll again soon, or at once when the process exits.
		timer := time.NewTimer(50 * time.Millisecond)
		select {
		case <-p.done:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// waitAnswer waits until the driver answers on endpoint and says why not
// otherwise.
func (l *launcher) waitAnswer(p *process, endpoint string) error {
	switch l.waitAnswerOrExit(p, endpoint) {
	case answered:
		return nil
	case exited:
		return fmt.Errorf("it exited with status %d before it answered GetPluginInfo on %s; %s", p.exitCode(), endpoint, p.tail())
	default:
		return fmt.Errorf("it did not answer GetPluginInfo on %s within %v; %s", endpoint, l.ready, p.tail())
	}
}

// lockedBuffer is a bytes.Buffer for the output of a process.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
