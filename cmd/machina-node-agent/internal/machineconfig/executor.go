package machineconfig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Executor runs the host actions of the MachineConfig side: systemctl
// (daemon-reload, reload, restart, reboot) and the operator's OS update
// command. Every host action goes through it, so a test that puts a
// recording systemctl first on the PATH (or names one) sees the whole
// sequence.
type Executor struct {
	// Systemctl is the command line systemctl is run with, e.g.
	// ["systemctl"] on the host, or ["chroot", "/host", "systemctl"] in the
	// DaemonSet's container.
	Systemctl []string
	// OSUpdateCommand is run with /bin/sh -c to change the kernel type,
	// the OS image or the extensions; "" when the operator gave none.
	OSUpdateCommand string
	// Timeout bounds each command.
	Timeout time.Duration
}

// systemctl runs systemctl with args.
func (e *Executor) systemctl(ctx context.Context, args ...string) error {
	if len(e.Systemctl) == 0 {
		return errors.New("no systemctl command is configured")
	}
	argv := append(append([]string{}, e.Systemctl[1:]...), args...)
	return e.run(ctx, "systemctl "+strings.Join(args, " "), exec.Command(e.Systemctl[0], argv...))
}

// osUpdate runs the OS update command with env added to the agent's.
func (e *Executor) osUpdate(ctx context.Context, env []string) error {
	cmd := exec.Command("/bin/sh", "-c", e.OSUpdateCommand)
	cmd.Env = append(os.Environ(), env...)
	return e.run(ctx, "the OS update command", cmd)
}

// run runs cmd within the timeout; a failure names what ran and ends with
// the last line of its output.
func (e *Executor) run(ctx context.Context, what string, cmd *exec.Cmd) error {
	ctx, cancel := context.WithTimeout(ctx, e.Timeout)
	defer cancel()
	c := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	c.Env = cmd.Env
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
