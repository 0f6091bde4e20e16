package conformancetest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// Program is a driver program that a test runs as a process: an
// executable, or an interpreter and its script. Its endpoint is passed in
// MACHINA_DRIVER_ENDPOINT, the variable the core's pod sets.
type Program struct {
	// Name names the process in errors, e.g. "python driver".
	Name string
	// Path is the executable or the interpreter.
	Path string
	// Args come before the driver's own flags, e.g. the script.
	Args []string
	// Env is added to the test's environment.
	Env []string
}

// CommandLine is the program as a launcher-mode --driver-command: the
// environment, the path and the arguments, then extra flags.
func (p Program) CommandLine(flags ...string) string {
	return strings.Join(append(append(append(append([]string(nil), p.Env...), p.Path), p.Args...), flags...), " ")
}

// Driver is a Program running as a child process.
type Driver struct {
	*child
	Socket   string
	Endpoint string
	Logs     *Buffer
}

// SocketDir returns a new directory for a driver socket, short enough for
// the 107-byte limit of a socket path (t.TempDir() can be longer).
func SocketDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "drv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Start starts the program on a socket of its own, waits until it answers
// Probe, and stops it with SIGTERM when the test ends. The driver's log is
// printed when the test fails.
func (p Program) Start(t testing.TB, args ...string) *Driver {
	t.Helper()
	d := p.Launch(t, filepath.Join(SocketDir(t), "driver.sock"), args...)
	d.WaitServing(t)
	return d
}

// Launch starts the program on socket without waiting for it.
func (p Program) Launch(t testing.TB, socket string, args ...string) *Driver {
	t.Helper()
	d := &Driver{Socket: socket, Endpoint: "unix://" + socket, Logs: &Buffer{}}
	var err error
	d.child, err = p.startChild(d.Endpoint, d.Logs, args)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Stop(30 * time.Second); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("driver log:\n%s", d.Logs.String())
		}
	})
	return d
}

// startChild starts the program on endpoint, its output into out, with
// extra flags.
func (p Program) startChild(endpoint string, out *Buffer, flags []string) (*child, error) {
	args := append(append([]string(nil), p.Args...), flags...)
	env := append(append(os.Environ(), "MACHINA_DRIVER_ENDPOINT="+endpoint), p.Env...)
	return startChild(p.Name, p.Path, args, env, out)
}

// WaitServing waits until the driver answers Probe.
func (d *Driver) WaitServing(t testing.TB) {
	t.Helper()
	identity := driverv1alpha1.NewIdentityServiceClient(Dial(t, d.Endpoint))
	served := withinStartTimeout(func() bool {
		if !d.Running() {
			return true
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := identity.Probe(ctx, &driverv1alpha1.ProbeRequest{})
		return err == nil
	})
	switch {
	case !d.Running():
		t.Fatalf("the driver exited before serving:\n%s", d.Logs.String())
	case !served:
		t.Fatalf("the driver did not answer Probe on %s within 30s", d.Endpoint)
	}
}

// Wait waits for the driver to exit and returns its exit code.
func (d *Driver) Wait(t testing.TB, timeout time.Duration) int {
	t.Helper()
	select {
	case <-d.Exited():
	case <-time.After(timeout):
		t.Fatalf("the driver did not exit within %v", timeout)
	}
	var exit *exec.ExitError
	if err := d.Err(); err != nil && !errors.As(err, &exit) {
		t.Fatalf("waiting for the driver: %v", err)
	}
	return d.ExitCode()
}

// Dial connects to endpoint; the connection closes when the test ends.
func Dial(t testing.TB, endpoint string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
