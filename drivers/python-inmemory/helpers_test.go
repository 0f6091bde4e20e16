package pythoninmemory

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/machina-io/machina/internal/process"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// aptPackages are the Debian packages the driver runs on.
const aptPackages = "python3-grpcio python3-protobuf"

// python returns the interpreter that runs the driver and fails the test,
// naming the packages to install, when it cannot import grpc and protobuf.
// Debian's /usr/bin/python3 is the default because the packages install
// into it; a python3 found on PATH (pyenv, a virtualenv) usually lacks them.
func python(t testing.TB) string {
	t.Helper()
	interpreter := os.Getenv("MACHINA_PYTHON")
	if interpreter == "" {
		interpreter = "/usr/bin/python3"
	}
	out, err := exec.Command(interpreter, "-c", "import grpc, google.protobuf").CombinedOutput()
	if err != nil {
		t.Fatalf("the Python driver needs %s with grpc and protobuf: %v\n%s\ninstall them with: apt-get install -y %s (or set MACHINA_PYTHON to an interpreter that has them)",
			interpreter, err, out, aptPackages)
	}
	return interpreter
}

// driverDir is this directory: main.py and the Python package live here.
func driverDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	return dir
}

// socketDir returns a new directory for a driver socket, short enough for
// the 107-byte limit of a socket path (t.TempDir() can be longer).
func socketDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pyd")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// driverProcess is the Python driver running as a child process.
type driverProcess struct {
	*process.Process
	Socket   string
	Endpoint string
	Logs     *process.Buffer
}

// startDriver starts the driver with its endpoint in MACHINA_DRIVER_ENDPOINT
// (the variable the core's pod sets), waits until it answers Probe, and
// stops it with SIGTERM when the test ends. The driver's log is printed when
// the test fails.
func startDriver(t testing.TB, args ...string) *driverProcess {
	t.Helper()
	p := launchDriver(t, filepath.Join(socketDir(t), "driver.sock"), args...)
	p.waitServing(t)
	return p
}

// launchDriver starts the driver on socket without waiting for it.
func launchDriver(t testing.TB, socket string, args ...string) *driverProcess {
	t.Helper()
	p := &driverProcess{Socket: socket, Endpoint: "unix://" + socket, Logs: &process.Buffer{}}
	var err error
	p.Process, err = process.Start(process.Config{
		Name:   "python driver",
		Path:   python(t),
		Args:   append([]string{filepath.Join(driverDir(t), "main.py")}, args...),
		Env:    append(os.Environ(), "MACHINA_DRIVER_ENDPOINT="+p.Endpoint, "PYTHONDONTWRITEBYTECODE=1"),
		Output: p.Logs,
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := p.Stop(30 * time.Second); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("driver log:\n%s", p.Logs.String())
		}
	})
	return p
}

// waitServing waits until the driver answers Probe.
func (p *driverProcess) waitServing(t testing.TB) {
	t.Helper()
	conn := dial(t, p.Endpoint)
	identity := driverv1alpha1.NewIdentityServiceClient(conn)
	require.Eventually(t, func() bool {
		require.True(t, p.Running(), "the driver exited before serving:\n%s", p.Logs.String())
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := identity.Probe(ctx, &driverv1alpha1.ProbeRequest{})
		return err == nil
	}, 30*time.Second, 20*time.Millisecond, "the driver did not answer Probe on %s", p.Endpoint)
}

// wait waits for the driver to exit and returns its exit code.
func (p *driverProcess) wait(t testing.TB, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.Exited():
	case <-time.After(timeout):
		t.Fatalf("the driver did not exit within %v", timeout)
	}
	var exit *exec.ExitError
	if err := p.Err(); !errors.As(err, &exit) {
		require.NoError(t, err)
	}
	return p.ExitCode()
}

// dial connects to endpoint; the connection closes when the test ends.
func dial(t testing.TB, endpoint string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}
