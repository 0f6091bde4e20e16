package machineconfig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/machina-io/machina/cmd/machina-node-agent/internal/hostexec"
)

// Executor runs the host actions of the MachineConfig side: systemctl
// (daemon-reload, reload, restart, reboot) and the operator's OS update
// command. Every host action goes through it, so a test that puts a
// recording systemctl first on the PATH (or names one) sees the whole
// sequence.
type Executor struct {
	// Systemctl is the command line systemctl is run with, e.g.
	// ["systemctl"], found by Host.
	Systemctl []string
	// OSUpdateCommand is run with /bin/sh -c to change the kernel type,
	// the OS image or the extensions; "" when the operator gave none.
	OSUpdateCommand string
	// Timeout bounds each command.
	Timeout time.Duration
	// Host starts the commands: inside the node's root with --chroot (the
	// DaemonSet's image has no systemctl or shell of its own).
	Host hostexec.Runner
}

// systemctl runs systemctl with args.
func (e *Executor) systemctl(ctx context.Context, args ...string) error {
	if len(e.Systemctl) == 0 {
		return errors.New("no systemctl command is configured")
	}
	argv := append(append([]string{}, e.Systemctl[1:]...), args...)
	return e.run(ctx, "systemctl "+strings.Join(args, " "), func(ctx context.Context) *exec.Cmd {
		return e.Host.Command(ctx, nil, e.Systemctl[0], argv...)
	})
}

// osUpdate runs the OS update command with env added to the agent's.
func (e *Executor) osUpdate(ctx context.Context, env []string) error {
	return e.run(ctx, "the OS update command", func(ctx context.Context) *exec.Cmd {
		return e.Host.Command(ctx, env, "/bin/sh", "-c", e.OSUpdateCommand)
	})
}

// run runs the command of command within the timeout; a failure names
// what ran and ends with the last line of its output.
func (e *Executor) run(ctx context.Context, what string, command func(context.Context) *exec.Cmd) error {
	ctx, cancel := context.WithTimeout(ctx, e.Timeout)
	defer cancel()
	c := command(ctx)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return fmt.Errorf("%s did not end within %s", what, e.Timeout)
	}
	if err != nil {
		return fmt.Errorf("%s failed: %w%s", what, err, lastLine(out.String()))
	}
	return nil
}

func lastLine(out string) string {
	out = strings.TrimSpace(out)
	if i := strings.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	if out == "" {
		return ""
	}
	if len(out) > 300 {
		out = out[:300] + "..."
	}
	return ": " + out
}
