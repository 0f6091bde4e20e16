package pythoninmemory

import (
	"context"
	"encoding/base64"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/machina-io/machina/conformance/conformancetest"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

func createRequest(name, spec string) *driverv1alpha1.CreateMachineRequest {
	return &driverv1alpha1.CreateMachineRequest{
		Machine:      &driverv1alpha1.Machine{Name: name, Namespace: "default"},
		MachineClass: &driverv1alpha1.MachineClass{Name: "small", Namespace: "default", ProviderSpec: []byte(spec)},
	}
}

// TestPythonUnitTests runs the driver's own unittest suite, so that
// `make test` covers it.
func TestPythonUnitTests(t *testing.T) {
	cmd := exec.Command(python(t), "-m", "unittest", "discover", "-s", "tests", "-t", ".", "-v")
	cmd.Dir = driverDir(t)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "python unit tests failed:\n%s", out)
	assert.Contains(t, string(out), "OK")
	t.Logf("%s", out)
}

// TestSIGTERMLetsCallsInFlightFinish sends SIGTERM while a slow
// CreateMachine is in flight: the call must still answer OK, the process
// must exit with status 0 and remove its socket (§2.7).
func TestSIGTERMLetsCallsInFlightFinish(t *testing.T) {
	d := startDriver(t)
	machines := driverv1alpha1.NewMachineServiceClient(conformancetest.Dial(t, d.Endpoint))
	req := createRequest("slow", `{"createDelay": 2}`)

	type result struct {
		resp *driverv1alpha1.CreateMachineResponse
		err  error
	}
	created := make(chan result, 1)
	go func() {
		resp, err := machines.CreateMachine(context.Background(), req)
		created <- result{resp, err}
	}()
	// The creation is in flight once another call for the machine answers
	// ABORTED (§9).
	statusReq := &driverv1alpha1.GetMachineStatusRequest{Machine: req.Machine, MachineClass: req.MachineClass}
	require.Eventually(t, func() bool {
		_, err := machines.GetMachineStatus(context.Background(), statusReq)
		return status.Code(err) == codes.Aborted
	}, 10*time.Second, 10*time.Millisecond, "the slow create never got in flight")

	d.Signal(syscall.SIGTERM)
	select {
	case r := <-created:
		require.NoError(t, r.err, "a call in flight at SIGTERM must finish")
		assert.True(t, strings.HasPrefix(r.resp.GetProviderId(), "python-inmemory:///default/slow/"), r.resp.GetProviderId())
	case <-time.After(20 * time.Second):
		t.Fatal("the create in flight at SIGTERM did not answer")
	}
	assert.Equal(t, 0, d.Wait(t, 30*time.Second), "exit status after SIGTERM")
	assert.NoFileExists(t, d.Socket, "the driver removes its socket on exit")
	assert.Contains(t, d.Logs.String(), "received SIGTERM")
}

// TestSecretsNeverLogged sends recognisable secret values in every secret
// field, on successful and failing calls, and checks that the driver's log
// shows the calls with the values stripped (§8.3).
func TestSecretsNeverLogged(t *testing.T) {
	const canary = "python-canary-5b1e9c"
	d := startDriver(t, "--log-level", "debug")
	machines := driverv1alpha1.NewMachineServiceClient(conformancetest.Dial(t, d.Endpoint))
	ctx := context.Background()
	secrets := map[string][]byte{"token": []byte(canary)}

	req := createRequest("secret-holder", `{}`)
	req.Secrets, req.UserData = secrets, []byte("#cloud-config\n# "+canary)
	created, err := machines.CreateMachine(ctx, req)
	require.NoError(t, err)

	bad := createRequest("secret-holder", `{"other": true}`)
	bad.Secrets, bad.UserData = secrets, []byte(canary)
	_, err = machines.CreateMachine(ctx, bad)
	require.Equal(t, codes.AlreadyExists, status.Code(err))
	assert.NotContains(t, err.Error(), canary)

	_, err = machines.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{MachineClass: req.MachineClass, Secrets: secrets})
	require.NoError(t, err)
	m := &driverv1alpha1.Machine{Name: "secret-holder", Namespace: "default", ProviderId: created.GetProviderId()}
	_, err = machines.DeleteMachine(ctx, &driverv1alpha1.DeleteMachineRequest{Machine: m, MachineClass: req.MachineClass, Secrets: secrets})
	require.NoError(t, err)

	// The log is complete once the process has exited.
	d.Signal(syscall.SIGTERM)
	require.Equal(t, 0, d.Wait(t, 30*time.Second))
	logs := d.Logs.String()
	for _, method := range []string{"CreateMachine", "ListMachines", "DeleteMachine"} {
		assert.Contains(t, logs, "method="+method, "every call is logged")
	}
	assert.NotContains(t, logs, canary)
	assert.NotContains(t, logs, base64.StdEncoding.EncodeToString([]byte(canary)), "nor base64-encoded, as JSON shows bytes")
	assert.Contains(t, logs, base64.StdEncoding.EncodeToString([]byte("***stripped***")), "secret fields are logged as stripped")
}

// TestEndpointRules checks the endpoint precedence and the socket rules of
// §2.1 and §2.2 on the running process.
func TestEndpointRules(t *testing.T) {
	t.Run("flag wins over the environment", func(t *testing.T) {
		dir := conformancetest.SocketDir(t)
		flagSocket := filepath.Join(dir, "flag.sock")
		d := program(t).Launch(t, filepath.Join(dir, "env.sock"), "--endpoint", "unix://"+flagSocket)
		d.Endpoint, d.Socket = "unix://"+flagSocket, flagSocket
		d.WaitServing(t)
		assert.NoFileExists(t, filepath.Join(dir, "env.sock"))
		info, err := os.Stat(flagSocket)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "socket mode")
	})
	t.Run("stale socket is replaced", func(t *testing.T) {
		socket := filepath.Join(conformancetest.SocketDir(t), "driver.sock")
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: socket, Net: "unix"})
		require.NoError(t, err)
		l.SetUnlinkOnClose(false)
		require.NoError(t, l.Close()) // the file stays, nobody listens: stale
		require.FileExists(t, socket)
		d := program(t).Launch(t, socket)
		d.WaitServing(t)
	})
	t.Run("live socket is not taken over", func(t *testing.T) {
		first := startDriver(t)
		second := program(t).Launch(t, first.Socket)
		assert.Equal(t, 1, second.Wait(t, 30*time.Second))
		assert.Contains(t, second.Logs.String(), "served by another process")
		first.WaitServing(t) // still serving
	})
	t.Run("other file is kept", func(t *testing.T) {
		path := filepath.Join(conformancetest.SocketDir(t), "driver.sock")
		require.NoError(t, os.WriteFile(path, []byte("keep"), 0o600))
		d := program(t).Launch(t, path)
		assert.Equal(t, 1, d.Wait(t, 30*time.Second))
		assert.Contains(t, d.Logs.String(), "is not a socket")
		content, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, "keep", string(content))
	})
	t.Run("relative unix path is refused", func(t *testing.T) {
		d := program(t).Launch(t, "relative.sock") // MACHINA_DRIVER_ENDPOINT=unix://relative.sock
		assert.Equal(t, 1, d.Wait(t, 30*time.Second))
		assert.Contains(t, d.Logs.String(), "'unix://relative.sock'")
	})
}

// TestStopRightAfterAClientLeftIsPrompt: a client that closed its
// connection just before SIGTERM must not hold the stop for the grace
// period.
func TestStopRightAfterAClientLeftIsPrompt(t *testing.T) {
	conformancetest.CheckPromptStopAfterClientLeft(t, program(t), 5, 10*time.Second, "--shutdown-grace", "10")
}
