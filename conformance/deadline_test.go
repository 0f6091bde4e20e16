package conformance_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/machina-io/machina/conformance"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// holdingDriver is a driver whose CreateMachine and GetMachineStatus
// handlers take hold, ignoring the call's context, and whose other RPCs
// answer at once. It has no optional capability and keeps no VMs: the
// deadline check judges only when and how calls end.
type holdingDriver struct {
	driverv1alpha1.UnimplementedIdentityServiceServer
	driverv1alpha1.UnimplementedMachineServiceServer
	hold time.Duration
}

func (holdingDriver) GetPluginInfo(context.Context, *driverv1alpha1.GetPluginInfoRequest) (*driverv1alpha1.GetPluginInfoResponse, error) {
	return &driverv1alpha1.GetPluginInfoResponse{Name: "holding.conformance.machina.io", VendorVersion: "v0.1.0"}, nil
}

func (holdingDriver) GetPluginCapabilities(context.Context, *driverv1alpha1.GetPluginCapabilitiesRequest) (*driverv1alpha1.GetPluginCapabilitiesResponse, error) {
	return &driverv1alpha1.GetPluginCapabilitiesResponse{}, nil
}

func (holdingDriver) Probe(context.Context, *driverv1alpha1.ProbeRequest) (*driverv1alpha1.ProbeResponse, error) {
	return &driverv1alpha1.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}

func (d holdingDriver) CreateMachine(context.Context, *driverv1alpha1.CreateMachineRequest) (*driverv1alpha1.CreateMachineResponse, error) {
	time.Sleep(d.hold)
	return nil, status.Error(codes.Unavailable, "the provider took too long")
}

func (d holdingDriver) GetMachineStatus(context.Context, *driverv1alpha1.GetMachineStatusRequest) (*driverv1alpha1.GetMachineStatusResponse, error) {
	time.Sleep(d.hold)
	return nil, status.Error(codes.NotFound, "no such machine")
}

func (holdingDriver) DeleteMachine(context.Context, *driverv1alpha1.DeleteMachineRequest) (*driverv1alpha1.DeleteMachineResponse, error) {
	return &driverv1alpha1.DeleteMachineResponse{}, nil
}

// serveHolding serves d on a Unix socket. With handler set, the server is
// net/http's HTTP/2 server with handler in front of the gRPC server, so
// that a test can answer some calls with something other than gRPC.
func serveHolding(t *testing.T, d holdingDriver, handler func(grpcServer http.Handler) http.Handler) string {
	t.Helper()
	return serveDriver(t, d, d, handler)
}

// serveDriver serves the two services on a Unix socket, see serveHolding.
func serveDriver(t *testing.T, identity driverv1alpha1.IdentityServiceServer, machines driverv1alpha1.MachineServiceServer,
	handler func(grpcServer http.Handler) http.Handler) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mdl")
	require.NoError(t, err)
	sock := filepath.Join(dir, "d.sock")
	lis, err := net.Listen("unix", sock)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(sock, 0o600))
	srv := grpc.NewServer()
	driverv1alpha1.RegisterIdentityServiceServer(srv, identity)
	driverv1alpha1.RegisterMachineServiceServer(srv, machines)
	served := make(chan struct{})
	stop := srv.Stop
	if handler == nil {
		go func() { defer close(served); _ = srv.Serve(lis) }()
	} else {
		var protocols http.Protocols
		protocols.SetUnencryptedHTTP2(true)
		hs := &http.Server{Handler: handler(srv), Protocols: &protocols, ReadHeaderTimeout: 10 * time.Second}
		go func() { defer close(served); _ = hs.Serve(lis) }()
		stop = func() { _ = hs.Close() }
	}
	t.Cleanup(func() {
		stop()
		<-served
		_ = os.RemoveAll(dir)
	})
	return "unix://" + sock
}

// runDeadlineCheck runs only Deadlines/answered_by_deadline against
// endpoint and returns its result.
func runDeadlineCheck(t *testing.T, endpoint string, deadline time.Duration) conformance.Result {
	t.Helper()
	r := &conformance.Runner{Focus: regexp.MustCompile(`^Deadlines/`)}
	rep := r.Run(context.Background(), conformance.Config{
		Endpoint:      endpoint,
		MachineClass:  conformance.MachineClass{ProviderSpec: []byte(`{}`)},
		Timeouts:      conformance.Timeouts{Identity: 5 * time.Second, Ready: 5 * time.Second, Delete: 5 * time.Second},
		ShortDeadline: deadline,
		DeadlineGrace: 2 * time.Second,
	})
	require.Empty(t, rep.SuiteFailures)
	res, ok := rep.Result("Deadlines/answered_by_deadline")
	require.True(t, ok, "the deadline check ran")
	return res
}

// TestDeadlineResetAtDeadlineHonoursIt: grpc-go's server resets a call's
// stream with RST_STREAM(CANCEL) when its deadline passes while the handler
// still runs. That ends the call by its deadline (§10.2), and a gRPC client
// sees a CANCELLED status: the check passes, every time.
func TestDeadlineResetAtDeadlineHonoursIt(t *testing.T) {
	const deadline = 300 * time.Millisecond
	// The handlers outlive the deadline, so the reset always comes first.
	endpoint := serveHolding(t, holdingDriver{hold: deadline + 700*time.Millisecond}, nil)
	res := runDeadlineCheck(t, endpoint, deadline)
	assert.Equal(t, conformance.StatusPassed, res.Status, "failures: %v", res.Failures)
	logs := strings.Join(res.Logs, "\n")
	for _, rpc := range []string{"CreateMachine", "GetMachineStatus"} {
		assert.Regexp(t, rpc+` with a 300ms deadline: the stream was reset \(RST_STREAM CANCEL\) after \d+ms, once the deadline had passed`, logs)
	}
}

// TestDeadlineResetBeforeDeadlineFails: a stream reset long before the
// deadline cuts off a call that was still allowed to run; no gRPC status
// was sent, and the check fails naming §7.1.
func TestDeadlineResetBeforeDeadlineFails(t *testing.T) {
	endpoint := serveHolding(t, holdingDriver{}, func(grpcServer http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/GetMachineStatus") {
				// net/http resets the stream of a handler that panics so.
				panic(http.ErrAbortHandler)
			}
			grpcServer.ServeHTTP(w, r)
		})
	})
	res := runDeadlineCheck(t, endpoint, 2*time.Second)
	assert.Equal(t, conformance.StatusFailed, res.Status)
	require.Len(t, res.Failures, 1, "only GetMachineStatus fails: %v", res.Failures)
	assert.Regexp(t, `^GetMachineStatus: .*§7\.1 .*: GetMachineStatus sent with a 2s deadline: the stream was reset \(RST_STREAM [A-Z_]+\) after [^,]+, before the deadline`, res.Failures[0])
}
