package sdk

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// canary is a secret value that must never appear in a log line or error.
const canary = "CANARY-SECRET-7f3a"

var testInfo = Info{Name: "test.driver.machina.io", Version: "v0.1.0", Manifest: map[string]string{"commit": "abc"}}

// testDriver implements the required RPCs. A create of a machine named
// "panic" panics; one named "block" signals entered and waits for release
// (or its context).
type testDriver struct {
	calls   atomic.Int32
	entered chan struct{}
	release chan struct{}
	// sawCancel is closed when a blocked call sees its context end.
	sawCancel chan struct{}
}

func newTestDriver() *testDriver {
	return &testDriver{
		entered:   make(chan struct{}, 1),
		release:   make(chan struct{}),
		sawCancel: make(chan struct{}),
	}
}

func (d *testDriver) CreateMachine(ctx context.Context, req *driverv1alpha1.CreateMachineRequest) (*driverv1alpha1.CreateMachineResponse, error) {
	d.calls.Add(1)
	switch req.GetMachine().GetName() {
	case "panic":
		panic("driver bug 42")
	case "block":
		d.entered <- struct{}{}
		select {
		case <-d.release:
		case <-ctx.Done():
			close(d.sawCancel)
			return nil, ctx.Err()
		}
	case "exhausted":
		return nil, ResourceExhausted("no capacity in zone")
	}
	name := req.GetMachine().GetName()
	return &driverv1alpha1.CreateMachineResponse{ProviderId: "test:///" + name, NodeName: name}, nil
}

func (d *testDriver) DeleteMachine(context.Context, *driverv1alpha1.DeleteMachineRequest) (*driverv1alpha1.DeleteMachineResponse, error) {
	d.calls.Add(1)
	return &driverv1alpha1.DeleteMachineResponse{}, nil
}

func (d *testDriver) GetMachineStatus(_ context.Context, req *driverv1alpha1.GetMachineStatusRequest) (*driverv1alpha1.GetMachineStatusResponse, error) {
	d.calls.Add(1)
	return nil, NotFound("no VM for machine %q", req.GetMachine().GetName())
}

// fullDriver implements every optional interface as well.
type fullDriver struct{ *testDriver }

func (d fullDriver) InitializeMachine(_ context.Context, req *driverv1alpha1.InitializeMachineRequest) (*driverv1alpha1.InitializeMachineResponse, error) {
	d.calls.Add(1)
	return &driverv1alpha1.InitializeMachineResponse{ProviderId: req.GetMachine().GetProviderId()}, nil
}

func (d fullDriver) ListMachines(context.Context, *driverv1alpha1.ListMachinesRequest) (*driverv1alpha1.ListMachinesResponse, error) {
	d.calls.Add(1)
	return &driverv1alpha1.ListMachinesResponse{Machines: []*driverv1alpha1.ListedMachine{{ProviderId: "test:///a", MachineName: "a"}}}, nil
}

func (d fullDriver) GetVolumeIDs(context.Context, *driverv1alpha1.GetVolumeIDsRequest) (*driverv1alpha1.GetVolumeIDsResponse, error) {
	d.calls.Add(1)
	return &driverv1alpha1.GetVolumeIDsResponse{}, nil
}

func (d fullDriver) UpdateMachine(_ context.Context, req *driverv1alpha1.UpdateMachineRequest) (*driverv1alpha1.UpdateMachineResponse, error) {
	d.calls.Add(1)
	if req.GetMachine().GetName() == "refuse" {
		return NeedsNewVM("machineType differs"), nil
	}
	return Applied(&driverv1alpha1.GetMachineStatusResponse{ProviderId: req.GetMachine().GetProviderId()}, "updated"), nil
}

// probingDriver reports readiness through Prober.
type probingDriver struct {
	*testDriver
	ready bool
	err   error
}

func (d probingDriver) Probe(context.Context) (bool, error) { return d.ready, d.err }

// socketPath returns a socket path in a fresh directory that is removed
// after the test. t.TempDir() can exceed the 108-byte limit of a Unix
// socket path, so a shorter directory is used then.
func socketPath(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if len(dir) > 80 {
		var err error
		dir, err = os.MkdirTemp("", "m")
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
	}
	return filepath.Join(dir, "driver.sock")
}

// running is a server started by startServer.
type running struct {
	endpoint string
	path     string
	cancel   context.CancelFunc
	// stopped is closed when Serve has returned, with its error in serveErr.
	stopped  chan struct{}
	serveErr error
	conn     *grpc.ClientConn
}

// waitStopped waits for Serve to return and returns its error.
func (r *running) waitStopped(t *testing.T) error {
	t.Helper()
	select {
	case <-r.stopped:
		return r.serveErr
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return")
		return nil
	}
}

// isStopped reports whether Serve has returned.
func (r *running) isStopped() bool {
	select {
	case <-r.stopped:
		return true
	default:
		return false
	}
}

func (r *running) identity() driverv1alpha1.IdentityServiceClient {
	return driverv1alpha1.NewIdentityServiceClient(r.conn)
}

func (r *running) machines() driverv1alpha1.MachineServiceClient {
	return driverv1alpha1.NewMachineServiceClient(r.conn)
}

// startServer serves s on a fresh socket, waits until it answers, and
// stops it at the end of the test.
func startServer(t *testing.T, s *Server) *running {
	t.Helper()
	path := socketPath(t)
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{endpoint: "unix://" + path, path: path, cancel: cancel, stopped: make(chan struct{})}
	go func() {
		r.serveErr = s.Serve(ctx, r.endpoint)
		close(r.stopped)
	}()
	r.conn = dial(t, r.endpoint)
	t.Cleanup(func() {
		cancel()
		require.NoError(t, r.waitStopped(t))
	})
	require.Eventually(t, func() bool {
		callCtx, callCancel := context.WithTimeout(context.Background(), time.Second)
		defer callCancel()
		_, err := r.identity().GetPluginInfo(callCtx, &driverv1alpha1.GetPluginInfoRequest{})
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "server did not start answering")
	return r
}

func dial(t *testing.T, endpoint string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func newServer(t *testing.T, d Driver, opts ...Option) *Server {
	t.Helper()
	// Tests that look at logs pass their own logger, which comes later and
	// wins; the others keep the test output readable.
	opts = append([]Option{WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	s, err := NewServer(testInfo, d, opts...)
	require.NoError(t, err)
	return s
}

// callCtx is the context of one test call.
func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func validMachine(name string) *driverv1alpha1.Machine {
	return &driverv1alpha1.Machine{Name: name, Namespace: "default"}
}

func validClass() *driverv1alpha1.MachineClass {
	return &driverv1alpha1.MachineClass{Name: "small", Namespace: "default", ProviderSpec: []byte(`{"size":"small"}`)}
}

func validCreate(name string) *driverv1alpha1.CreateMachineRequest {
	return &driverv1alpha1.CreateMachineRequest{
		Machine:      validMachine(name),
		MachineClass: validClass(),
		Secrets:      map[string][]byte{"password": []byte(canary)},
		UserData:     []byte("#cloud-config\n# " + canary),
	}
}

func validUpdate(name string) *driverv1alpha1.UpdateMachineRequest {
	m := validMachine(name)
	m.ProviderId = "test:///" + name
	next := validClass()
	next.ProviderSpec = []byte(`{"size":"small","tags":{"team":"b"}}`)
	return &driverv1alpha1.UpdateMachineRequest{
		Machine:         m,
		OldMachineClass: validClass(),
		MachineClass:    next,
		Secrets:         map[string][]byte{"password": []byte(canary)},
	}
}

// logBuffer collects JSON log lines; the server logs from its own
// goroutines, so writes are serialised.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newLogger(b *logBuffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
