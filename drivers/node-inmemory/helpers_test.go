package nodeinmemory

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/machina-io/machina/drivers/node-inmemory/nodesetup"
	"github.com/machina-io/machina/internal/process"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

var (
	setupOnce sync.Once
	nodePath  string
	setupErr  error
)

// node returns the node binary that runs the driver, with the driver's
// node_modules/ installed from package-lock.json, and fails the test when it
// cannot: without node, the driver cannot be tested, and that is a failure,
// not a skip.
func node(t testing.TB) string {
	t.Helper()
	setupOnce.Do(func() { nodePath, setupErr = nodesetup.Node(driverDir(t)) })
	if setupErr != nil {
		t.Fatalf("the Node.js driver cannot run: %v", setupErr)
	}
	return nodePath
}

// driverDir is this directory: main.js and lib/ live here.
func driverDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	return dir
}

// mainJS is the driver's entry point.
func mainJS(t testing.TB) string { return filepath.Join(driverDir(t), "main.js") }

// socketDir returns a new directory for a driver socket, short enough for
// the 107-byte limit of a socket path (t.TempDir() can be longer).
func socketDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "nod")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// driverProcess is the Node.js driver running as a child process.
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
		Name:   "node driver",
		Path:   node(t),
		Args:   append([]string{mainJS(t)}, args...),
		Env:    append(os.Environ(), "MACHINA_DRIVER_ENDPOINT="+p.Endpoint),
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
