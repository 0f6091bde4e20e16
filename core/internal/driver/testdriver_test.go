package driver

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

const testDriverName = "test.driver.machina.io"

// testDriver is a small driver built on the generated servers. It counts
// the RPCs it receives, tracks how many calls per machine are in flight, and
// lets a test decide how each call ends.
type testDriver struct {
	driverv1alpha1.UnimplementedIdentityServiceServer
	driverv1alpha1.UnimplementedMachineServiceServer

	name      string
	version   string
	caps      []driverv1alpha1.Capability_Type
	providers []string

	mu          sync.Mutex
	probes      []probeAnswer // answered in turn; the last one repeats
	calls       map[string]int
	deadlines   map[string]time.Duration // time left of the last call, by RPC
	inFlight    map[string]int           // by machine name
	maxInFlight map[string]int
	// listResponse, when set, is the answer to ListMachines.
	listResponse *driverv1alpha1.ListMachinesResponse
	// onMachineCall, when set, runs inside every MachineService handler
	// that is about a machine, while the call counts as in flight.
	onMachineCall func(ctx context.Context, rpc string, m *driverv1alpha1.Machine) error
}

// probeAnswer is one answer to Probe: an error, or a ready value (nil: unset).
type probeAnswer struct {
	ready *bool
	err   error
}

func newTestDriver(caps ...driverv1alpha1.Capability_Type) *testDriver {
	return &testDriver{
		name:        testDriverName,
		version:     "v1.0.0",
		caps:        caps,
		calls:       make(map[string]int),
		deadlines:   make(map[string]time.Duration),
		inFlight:    make(map[string]int),
		maxInFlight: make(map[string]int),
	}
}

func (d *testDriver) count(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	rpc := info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:]
	d.mu.Lock()
	d.calls[rpc]++
	if deadline, ok := ctx.Deadline(); ok {
		d.deadlines[rpc] = time.Until(deadline)
	}
	d.mu.Unlock()
	return handler(ctx, req)
}

// callCount returns how many rpc calls the driver received.
func (d *testDriver) callCount(rpc string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[rpc]
}

// deadlineOf returns the time the last rpc call had left when it arrived.
func (d *testDriver) deadlineOf(rpc string) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.deadlines[rpc]
}

func (d *testDriver) inFlightFor(machine string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.inFlight[machine]
}

func (d *testDriver) maxInFlightFor(machine string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.maxInFlight[machine]
}

func (d *testDriver) GetPluginInfo(context.Context, *driverv1alpha1.GetPluginInfoRequest) (*driverv1alpha1.GetPluginInfoResponse, error) {
	return &driverv1alpha1.GetPluginInfoResponse{Name: d.name, VendorVersion: d.version, Providers: d.providers}, nil
}

func (d *testDriver) GetPluginCapabilities(context.Context, *driverv1alpha1.GetPluginCapabilitiesRequest) (*driverv1alpha1.GetPluginCapabilitiesResponse, error) {
	resp := &driverv1alpha1.GetPluginCapabilitiesResponse{}
	for _, t := range d.caps {
		resp.Capabilities = append(resp.Capabilities, &driverv1alpha1.Capability{Type: t})
	}
	return resp, nil
}

func (d *testDriver) Probe(context.Context, *driverv1alpha1.ProbeRequest) (*driverv1alpha1.ProbeResponse, error) {
	d.mu.Lock()
	var a probeAnswer
	if len(d.probes) > 0 {
		a = d.probes[0]
		if len(d.probes) > 1 {
			d.probes = d.probes[1:]
		}
	}
	d.mu.Unlock()
	if a.err != nil {
		return nil, a.err
	}
	resp := &driverv1alpha1.ProbeResponse{}
	if a.ready != nil {
		resp.Ready = wrapperspb.Bool(*a.ready)
	}
	return resp, nil
}

func (d *testDriver) setProbes(answers ...probeAnswer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.probes = answers
}

// machineCall does the bookkeeping of a call about machine m.
func (d *testDriver) machineCall(ctx context.Context, rpc string, m *driverv1alpha1.Machine) error {
	name := m.GetName()
	d.mu.Lock()
	d.inFlight[name]++
	d.maxInFlight[name] = max(d.maxInFlight[name], d.inFlight[name])
	hook := d.onMachineCall
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.inFlight[name]--
		d.mu.Unlock()
	}()
	if hook != nil {
		return hook(ctx, rpc, m)
	}
	return nil
}

func (d *testDriver) CreateMachine(ctx context.Context, req *driverv1alpha1.CreateMachineRequest) (*driverv1alpha1.CreateMachineResponse, error) {
	if err := d.machineCall(ctx, "CreateMachine", req.GetMachine()); err != nil {
		return nil, err
	}
	return &driverv1alpha1.CreateMachineResponse{ProviderId: "test:///" + req.GetMachine().GetName(), NodeName: req.GetMachine().GetName()}, nil
}

func (d *testDriver) InitializeMachine(ctx context.Context, req *driverv1alpha1.InitializeMachineRequest) (*driverv1alpha1.InitializeMachineResponse, error) {
	if err := d.machineCall(ctx, "InitializeMachine", req.GetMachine()); err != nil {
		return nil, err
	}
	return &driverv1alpha1.InitializeMachineResponse{ProviderId: req.GetMachine().GetProviderId(), NodeName: req.GetMachine().GetName()}, nil
}

func (d *testDriver) DeleteMachine(ctx context.Context, req *driverv1alpha1.DeleteMachineRequest) (*driverv1alpha1.DeleteMachineResponse, error) {
	if err := d.machineCall(ctx, "DeleteMachine", req.GetMachine()); err != nil {
		return nil, err
	}
	return &driverv1alpha1.DeleteMachineResponse{}, nil
}

func (d *testDriver) GetMachineStatus(ctx context.Context, req *driverv1alpha1.GetMachineStatusRequest) (*driverv1alpha1.GetMachineStatusResponse, error) {
	if err := d.machineCall(ctx, "GetMachineStatus", req.GetMachine()); err != nil {
		return nil, err
	}
	return &driverv1alpha1.GetMachineStatusResponse{ProviderId: "test:///" + req.GetMachine().GetName(), NodeName: req.GetMachine().GetName()}, nil
}

func (d *testDriver) ListMachines(context.Context, *driverv1alpha1.ListMachinesRequest) (*driverv1alpha1.ListMachinesResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.listResponse != nil {
		return d.listResponse, nil
	}
	return &driverv1alpha1.ListMachinesResponse{}, nil
}

func (d *testDriver) UpdateMachine(ctx context.Context, req *driverv1alpha1.UpdateMachineRequest) (*driverv1alpha1.UpdateMachineResponse, error) {
	if err := d.machineCall(ctx, "UpdateMachine", req.GetMachine()); err != nil {
		return nil, err
	}
	return &driverv1alpha1.UpdateMachineResponse{Result: &driverv1alpha1.UpdateMachineResponse_Applied{
		Applied: &driverv1alpha1.GetMachineStatusResponse{ProviderId: req.GetMachine().GetProviderId()},
	}}, nil
}

func (d *testDriver) GetVolumeIDs(context.Context, *driverv1alpha1.GetVolumeIDsRequest) (*driverv1alpha1.GetVolumeIDsResponse, error) {
	return &driverv1alpha1.GetVolumeIDsResponse{}, nil
}

// socketPath returns a socket path in a fresh short temp dir: t.TempDir()
// may exceed the 108-byte limit of a Unix socket path.
func socketPath(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "m")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return filepath.Join(dir, "driver.sock")
}

// serve starts d on a Unix socket at path. Without services (d == nil) the
// server answers UNIMPLEMENTED to everything, like a server of another API.
// The returned function stops the server and waits until it has stopped.
func serve(t *testing.T, path string, d *testDriver) (stop func()) {
	t.Helper()
	if d == nil {
		return startServer(t, listenUnix(t, path), func(*grpc.Server) {})
	}
	return startServer(t, listenUnix(t, path), d.register, grpc.UnaryInterceptor(d.count))
}

func (d *testDriver) register(srv *grpc.Server) {
	driverv1alpha1.RegisterIdentityServiceServer(srv, d)
	driverv1alpha1.RegisterMachineServiceServer(srv, d)
}

// listenUnix listens on path, removing a socket left by a stopped server.
func listenUnix(t *testing.T, path string) net.Listener {
	t.Helper()
	_ = os.Remove(path)
	lis, err := net.Listen("unix", path)
	require.NoError(t, err)
	return lis
}

// startServer serves the services register adds on lis until the test
// ends or the returned function is called.
func startServer(t *testing.T, lis net.Listener, register func(*grpc.Server), opts ...grpc.ServerOption) (stop func()) {
	t.Helper()
	srv := grpc.NewServer(opts...)
	register(srv)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			t.Errorf("serving test driver: %v", err)
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			srv.Stop()
			<-done
		})
	}
	t.Cleanup(stop)
	return stop
}

// logBuffer collects log lines written through a funcr logger.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) logger(verbosity int) logr.Logger {
	return funcr.New(func(prefix, args string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.lines = append(b.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: verbosity, LogCaller: funcr.None})
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

func (b *logBuffer) contains(s string) bool {
	return strings.Contains(b.String(), s)
}

// testOptions returns options with short intervals, a fresh metrics
// registry and logs going to logs.
func testOptions(logs *logBuffer) Options {
	return Options{
		ProbeInterval:   10 * time.Millisecond,
		WaitLogInterval: 50 * time.Millisecond,
		Logger:          logs.logger(10),
		Registerer:      prometheus.NewRegistry(),
	}
}

// connect connects to the driver at path and closes the client at the end
// of the test.
func connect(t *testing.T, path string, opts Options) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Connect(ctx, "unix://"+path, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func testMachine(name string) *driverv1alpha1.Machine {
	return &driverv1alpha1.Machine{Name: name, Namespace: "default"}
}

func testClass() *driverv1alpha1.MachineClass {
	return &driverv1alpha1.MachineClass{Name: "small", ProviderSpec: []byte(`{"size":"small"}`)}
}

func ptrTo[T any](v T) *T { return &v }

// serveTCP serves d on a loopback TCP port and returns its address.
func serveTCP(t *testing.T, d *testDriver) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	startServer(t, lis, d.register, grpc.UnaryInterceptor(d.count))
	return lis.Addr().String()
}

// hasLine reports whether one log line contains every part.
func (b *logBuffer) hasLine(parts ...string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, line := range b.lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}
