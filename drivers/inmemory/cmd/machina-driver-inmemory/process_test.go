package main

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/machina-io/machina/internal/process"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// driverBinary builds the driver once per test run, with a version set
// through -ldflags as a release build would.
func driverBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "inmemory-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "machina-driver-inmemory")
		out, err := exec.Command("go", "build", "-ldflags", "-X main.version=v9.8.7-test", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = errors.New(string(out))
		}
	})
	require.NoError(t, buildErr, "building the driver")
	return binPath
}

// driver is a running driver binary and a connection to it.
type driver struct {
	*process.Process
	conn   *grpc.ClientConn
	output *process.Buffer
}

// start runs the driver with args on a fresh socket and waits until it
// answers GetPluginInfo.
func start(t *testing.T, env []string, args ...string) *driver {
	t.Helper()
	bin := driverBinary(t)
	dir, err := os.MkdirTemp("", "m")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	endpoint := "unix://" + filepath.Join(dir, "d.sock")

	p := &driver{output: &process.Buffer{}}
	p.Process, err = process.Start(process.Config{
		Name:   "machina-driver-inmemory",
		Path:   bin,
		Args:   append([]string{"--endpoint=" + endpoint}, args...),
		Env:    append(os.Environ(), env...),
		Output: p.output,
	})
	require.NoError(t, err)
	t.Cleanup(p.Kill)

	p.conn, err = grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { p.conn.Close() })
	identity := driverv1alpha1.NewIdentityServiceClient(p.conn)
	require.Eventually(t, func() bool {
		_, err := identity.GetPluginInfo(context.Background(), &driverv1alpha1.GetPluginInfoRequest{})
		return err == nil
	}, time.Minute, 20*time.Millisecond, "the driver did not come up")
	return p
}

// exitCode waits for the process to end and returns its exit code.
func (p *driver) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case <-p.Exited():
	case <-time.After(time.Minute):
		t.Fatal("the driver did not exit")
	}
	return p.ExitCode()
}

func request(name string) *driverv1alpha1.CreateMachineRequest {
	return &driverv1alpha1.CreateMachineRequest{
		Machine:      &driverv1alpha1.Machine{Name: name, Namespace: "default"},
		MachineClass: &driverv1alpha1.MachineClass{Name: "small", Namespace: "default", ProviderSpec: []byte("{}")},
	}
}

func statusOf(name string) *driverv1alpha1.GetMachineStatusRequest {
	return &driverv1alpha1.GetMachineStatusRequest{
		Machine:      &driverv1alpha1.Machine{Name: name, Namespace: "default"},
		MachineClass: &driverv1alpha1.MachineClass{Name: "small", Namespace: "default", ProviderSpec: []byte("{}")},
	}
}

func TestCrashAfterExitsWithCode3(t *testing.T) {
	p := start(t, nil, "--crash-after=2")
	ctx := context.Background()
	machines := driverv1alpha1.NewMachineServiceClient(p.conn)
	identity := driverv1alpha1.NewIdentityServiceClient(p.conn)

	_, err := machines.CreateMachine(ctx, request("m1"))
	require.NoError(t, err)
	_, err = identity.Probe(ctx, &driverv1alpha1.ProbeRequest{}) // not counted
	require.NoError(t, err)
	_, err = machines.GetMachineStatus(ctx, statusOf("m1"))
	require.NoError(t, err)

	_, err = machines.GetMachineStatus(ctx, statusOf("m1"))
	require.Error(t, err, "the third MachineService call must hit the crash")
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, 3, p.exitCode(t))
}

func TestStateFileSurvivesACrash(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	first := start(t, nil, "--crash-after=1", "--state-file="+state)
	ctx := context.Background()
	created, err := driverv1alpha1.NewMachineServiceClient(first.conn).CreateMachine(ctx, request("m1"))
	require.NoError(t, err)
	_, err = driverv1alpha1.NewMachineServiceClient(first.conn).GetMachineStatus(ctx, statusOf("m1"))
	require.Error(t, err)
	require.Equal(t, 3, first.exitCode(t))

	second := start(t, nil, "--state-file="+state)
	st, err := driverv1alpha1.NewMachineServiceClient(second.conn).GetMachineStatus(ctx, statusOf("m1"))
	require.NoError(t, err)
	assert.Equal(t, created.GetProviderId(), st.GetProviderId())
}

func TestFlagsAndEnvironmentConfigureTheProcess(t *testing.T) {
	p := start(t, []string{"MACHINA_INMEMORY_FAULTS=CreateMachine:code=RESOURCE_EXHAUSTED,count=1"},
		"--disable-capability=list,volumes,update")
	ctx := context.Background()
	identity := driverv1alpha1.NewIdentityServiceClient(p.conn)
	machines := driverv1alpha1.NewMachineServiceClient(p.conn)

	info, err := identity.GetPluginInfo(ctx, &driverv1alpha1.GetPluginInfoRequest{})
	require.NoError(t, err)
	assert.Equal(t, "inmemory.driver.machina.io", info.GetName())
	assert.Equal(t, "v9.8.7-test", info.GetVendorVersion(), "the version comes from -ldflags")

	caps, err := identity.GetPluginCapabilities(ctx, &driverv1alpha1.GetPluginCapabilitiesRequest{})
	require.NoError(t, err)
	require.Len(t, caps.GetCapabilities(), 1)
	assert.Equal(t, driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE, caps.GetCapabilities()[0].GetType())
	_, err = machines.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{
		MachineClass: &driverv1alpha1.MachineClass{Name: "small", Namespace: "default", ProviderSpec: []byte("{}")},
	})
	assert.Equal(t, codes.Unimplemented, status.Code(err))

	_, err = machines.CreateMachine(ctx, request("m1"))
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	_, err = machines.CreateMachine(ctx, request("m1"))
	require.NoError(t, err)
}

func TestSIGTERMStopsGracefully(t *testing.T) {
	p := start(t, nil)
	p.Signal(syscall.SIGTERM)
	assert.Equal(t, 0, p.exitCode(t), "output: %s", p.output.String())
}

// TestLogShowsProviderSpecAsJSON: the SDK's call log shows the provider spec
// as the JSON object it is, with a secret-looking key's value stripped, and
// neither its base64 form (protojson's rendering of bytes) nor the secret.
// Requests are logged at debug level.
func TestLogShowsProviderSpecAsJSON(t *testing.T) {
	p := start(t, nil, "--log-level", "DEBUG")
	const secret = "hunter2-in-the-provider-spec"
	spec := `{"capacity":{"cpu":"2"},"password":"` + secret + `"}`
	req := request("m-spec")
	req.MachineClass.ProviderSpec = []byte(spec)
	_, err := driverv1alpha1.NewMachineServiceClient(p.conn).CreateMachine(context.Background(), req)
	require.NoError(t, err)

	shown := `"providerSpec":{"capacity":{"cpu":"2"},"password":"***stripped***"}`
	require.Eventually(t, func() bool {
		return strings.Contains(p.output.String(), "CreateMachine")
	}, time.Minute, 20*time.Millisecond, "the call was not logged: %s", p.output.String())
	out := p.output.String()
	// The text handler quotes the JSON of the request.
	assert.Contains(t, out, strconv.Quote(shown)[1:len(strconv.Quote(shown))-1])
	assert.NotContains(t, out, base64.StdEncoding.EncodeToString([]byte(spec)))
	assert.NotContains(t, out, secret)
}
