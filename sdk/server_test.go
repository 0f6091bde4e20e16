package sdk

import (
	"context"
	"encoding/base64"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func requireCode(t *testing.T, want codes.Code, err error) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, want, status.Code(err), "error: %v", err)
}

func TestIdentity(t *testing.T) {
	r := startServer(t, newServer(t, newTestDriver()))

	info, err := r.identity().GetPluginInfo(callCtx(t), &driverv1alpha1.GetPluginInfoRequest{})
	require.NoError(t, err)
	assert.Equal(t, testInfo.Name, info.GetName())
	assert.Equal(t, testInfo.Version, info.GetVendorVersion())
	assert.Equal(t, testInfo.Manifest, info.GetManifest())

	probe, err := r.identity().Probe(callCtx(t), &driverv1alpha1.ProbeRequest{})
	require.NoError(t, err)
	require.NotNil(t, probe.GetReady(), "ready is always set")
	assert.True(t, probe.GetReady().GetValue())
}

func TestIdentityProviders(t *testing.T) {
	info, err := startServer(t, newServer(t, newTestDriver())).identity().GetPluginInfo(callCtx(t), &driverv1alpha1.GetPluginInfoRequest{})
	require.NoError(t, err)
	assert.Empty(t, info.GetProviders(), "a driver lists no providers unless told")

	withInfo := testInfo
	withInfo.Providers = []string{"AWS"}
	s, err := NewServer(withInfo, newTestDriver())
	require.NoError(t, err)
	info, err = startServer(t, s).identity().GetPluginInfo(callCtx(t), &driverv1alpha1.GetPluginInfoRequest{})
	require.NoError(t, err)
	assert.Equal(t, []string{"AWS"}, info.GetProviders())

	// WithProviders replaces Info.Providers, and is validated as they are.
	s, err = NewServer(withInfo, newTestDriver(), WithProviders("inmemory", "virtualnode"))
	require.NoError(t, err)
	info, err = startServer(t, s).identity().GetPluginInfo(callCtx(t), &driverv1alpha1.GetPluginInfoRequest{})
	require.NoError(t, err)
	assert.Equal(t, []string{"inmemory", "virtualnode"}, info.GetProviders())
	_, err = NewServer(testInfo, newTestDriver(), WithProviders("x", "x"))
	require.ErrorContains(t, err, `provider "x" is listed twice`)
}

func TestProbeFromProber(t *testing.T) {
	notReady := startServer(t, newServer(t, probingDriver{testDriver: newTestDriver(), ready: false}))
	probe, err := notReady.identity().Probe(callCtx(t), &driverv1alpha1.ProbeRequest{})
	require.NoError(t, err)
	require.NotNil(t, probe.GetReady())
	assert.False(t, probe.GetReady().GetValue())

	failing := startServer(t, newServer(t, probingDriver{testDriver: newTestDriver(), err: Unavailable("cloud API down")}))
	_, err = failing.identity().Probe(callCtx(t), &driverv1alpha1.ProbeRequest{})
	requireCode(t, codes.Unavailable, err)
}

func TestRequiredRPCsReachTheDriver(t *testing.T) {
	d := newTestDriver()
	r := startServer(t, newServer(t, d))

	created, err := r.machines().CreateMachine(callCtx(t), validCreate("m-1"))
	require.NoError(t, err)
	assert.Equal(t, "test:///m-1", created.GetProviderId())

	_, err = r.machines().DeleteMachine(callCtx(t), &driverv1alpha1.DeleteMachineRequest{Machine: validMachine("m-1"), MachineClass: validClass()})
	require.NoError(t, err)

	_, err = r.machines().GetMachineStatus(callCtx(t), &driverv1alpha1.GetMachineStatusRequest{Machine: validMachine("m-1"), MachineClass: validClass()})
	requireCode(t, codes.NotFound, err)
	assert.Contains(t, status.Convert(err).Message(), `no VM for machine "m-1"`)

	assert.Equal(t, int32(3), d.calls.Load())
}

func capabilityTypes(t *testing.T, r *running) []driverv1alpha1.Capability_Type {
	t.Helper()
	resp, err := r.identity().GetPluginCapabilities(callCtx(t), &driverv1alpha1.GetPluginCapabilitiesRequest{})
	require.NoError(t, err)
	var types []driverv1alpha1.Capability_Type
	for _, c := range resp.GetCapabilities() {
		types = append(types, c.GetType())
	}
	return types
}

func TestCapabilities(t *testing.T) {
	all := []driverv1alpha1.Capability_Type{
		driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE,
		driverv1alpha1.Capability_TYPE_LIST_MACHINES,
		driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS,
		driverv1alpha1.Capability_TYPE_UPDATE_MACHINE,
	}
	initReq := &driverv1alpha1.InitializeMachineRequest{
		Machine: &driverv1alpha1.Machine{Name: "m", Namespace: "default", ProviderId: "test:///m"}, MachineClass: validClass(),
	}
	listReq := &driverv1alpha1.ListMachinesRequest{MachineClass: validClass()}
	volReq := &driverv1alpha1.GetVolumeIDsRequest{Volumes: []*driverv1alpha1.PersistentVolume{{Name: "pv", Spec: []byte(`{}`)}}}
	updateReq := validUpdate("m")

	type call func(context.Context, *running) error
	calls := map[driverv1alpha1.Capability_Type]call{
		driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE: func(ctx context.Context, r *running) error {
			_, err := r.machines().InitializeMachine(ctx, initReq)
			return err
		},
		driverv1alpha1.Capability_TYPE_LIST_MACHINES: func(ctx context.Context, r *running) error {
			_, err := r.machines().ListMachines(ctx, listReq)
			return err
		},
		driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS: func(ctx context.Context, r *running) error {
			_, err := r.machines().GetVolumeIDs(ctx, volReq)
			return err
		},
		driverv1alpha1.Capability_TYPE_UPDATE_MACHINE: func(ctx context.Context, r *running) error {
			_, err := r.machines().UpdateMachine(ctx, updateReq)
			return err
		},
	}

	tests := []struct {
		name string
		full bool
		opts []Option
		want []driverv1alpha1.Capability_Type
	}{
		{name: "required RPCs only", full: false, want: nil},
		{name: "every optional interface", full: true, want: all},
		{
			name: "list hidden", full: true,
			opts: []Option{WithoutCapability(driverv1alpha1.Capability_TYPE_LIST_MACHINES)},
			want: []driverv1alpha1.Capability_Type{driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE, driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS, driverv1alpha1.Capability_TYPE_UPDATE_MACHINE},
		},
		{
			name: "all hidden", full: true,
			opts: []Option{
				WithoutCapability(driverv1alpha1.Capability_TYPE_LIST_MACHINES),
				WithoutCapability(driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE),
				WithoutCapability(driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS),
				WithoutCapability(driverv1alpha1.Capability_TYPE_UPDATE_MACHINE),
			},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			td := newTestDriver()
			var d Driver = td
			if tt.full {
				d = fullDriver{td}
			}
			s := newServer(t, d, tt.opts...)
			assert.Equal(t, tt.want, s.Capabilities())
			r := startServer(t, s)
			assert.Equal(t, tt.want, capabilityTypes(t, r))

			for _, c := range all {
				err := calls[c](callCtx(t), r)
				if slicesContains(tt.want, c) {
					assert.NoError(t, err, "%s is advertised", c)
				} else {
					requireCode(t, codes.Unimplemented, err)
				}
			}
			assert.Equal(t, int32(len(tt.want)), td.calls.Load(), "only advertised RPCs reach the driver")
		})
	}
}

func slicesContains(s []driverv1alpha1.Capability_Type, v driverv1alpha1.Capability_Type) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestUnadvertisedRPCIsUnimplementedEvenWithInvalidArguments(t *testing.T) {
	r := startServer(t, newServer(t, newTestDriver()))
	_, err := r.machines().GetVolumeIDs(callCtx(t), &driverv1alpha1.GetVolumeIDsRequest{})
	requireCode(t, codes.Unimplemented, err)
}

func TestPanicRecovery(t *testing.T) {
	logs := &logBuffer{}
	d := newTestDriver()
	r := startServer(t, newServer(t, d, WithLogger(newLogger(logs))))

	_, err := r.machines().CreateMachine(callCtx(t), validCreate("panic"))
	requireCode(t, codes.Internal, err)
	assert.Equal(t, "internal error", status.Convert(err).Message(), "the panic value is not returned")
	assert.Contains(t, logs.String(), "driver bug 42", "the panic value is logged")

	resp, err := r.machines().CreateMachine(callCtx(t), validCreate("after-panic"))
	require.NoError(t, err, "the server keeps serving after a panic")
	assert.Equal(t, "test:///after-panic", resp.GetProviderId())
}

func TestGracefulStopLetsCallsInFlightFinish(t *testing.T) {
	d := newTestDriver()
	r := startServer(t, newServer(t, d))

	type result struct {
		resp *driverv1alpha1.CreateMachineResponse
		err  error
	}
	inFlight := make(chan result, 1)
	go func() {
		resp, err := r.machines().CreateMachine(context.Background(), validCreate("block"))
		inFlight <- result{resp, err}
	}()
	<-d.entered

	r.cancel()
	// The listener closes at once: new connections are refused while the
	// call in flight is still running.
	require.Eventually(t, func() bool {
		conn, err := net.DialTimeout("unix", r.path, time.Second)
		if err == nil {
			_ = conn.Close()
		}
		return err != nil
	}, 10*time.Second, 10*time.Millisecond)
	require.False(t, r.isStopped(), "Serve returned while a call was in flight")

	close(d.release)
	res := <-inFlight
	require.NoError(t, res.err)
	assert.Equal(t, "test:///block", res.resp.GetProviderId())

	require.NoError(t, r.waitStopped(t))
	_, err := os.Lstat(r.path)
	assert.True(t, os.IsNotExist(err), "the socket file is removed on exit")
}

func TestGracePeriodBoundsTheWait(t *testing.T) {
	d := newTestDriver()
	r := startServer(t, newServer(t, d, WithGracePeriod(200*time.Millisecond)))

	inFlight := make(chan error, 1)
	go func() {
		_, err := r.machines().CreateMachine(context.Background(), validCreate("block"))
		inFlight <- err
	}()
	<-d.entered
	start := time.Now()
	r.cancel()

	require.NoError(t, r.waitStopped(t))
	// Far below the 25s default, which would apply if the option were
	// ignored.
	assert.Less(t, time.Since(start), 10*time.Second)
	select {
	case <-d.sawCancel:
	case <-time.After(10 * time.Second):
		t.Fatal("the driver's call was not cancelled after the grace period")
	}
	require.Error(t, <-inFlight, "a call cut off by the stop fails")
}

func TestServeOnlyOnce(t *testing.T) {
	s := newServer(t, newTestDriver())
	r := startServer(t, s)
	err := s.Serve(context.Background(), "unix://"+socketPath(t))
	require.ErrorContains(t, err, "already served")
	_ = r
}

func TestServeRejectsBadEndpoint(t *testing.T) {
	s := newServer(t, newTestDriver())
	err := s.Serve(context.Background(), "unix://relative.sock")
	require.ErrorContains(t, err, "absolute")
}

// histogramCount returns the number of calls of method in the handling-time
// histogram grpc_server_handling_seconds.
func histogramCount(t *testing.T, reg *prometheus.Registry, method string) uint64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "grpc_server_handling_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelsMatch(m, map[string]string{"grpc_method": method}) {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}

func labelsMatch(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelsMatch(m, labels) {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("metric %s%v not found", name, labels)
	return 0
}

func TestMetricsRecorded(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := startServer(t, newServer(t, newTestDriver(), WithMetricsRegisterer(reg)))

	_, err := r.machines().CreateMachine(callCtx(t), validCreate("m-1"))
	require.NoError(t, err)
	_, err = r.machines().CreateMachine(callCtx(t), validCreate("m-2"))
	require.NoError(t, err)
	_, err = r.machines().CreateMachine(callCtx(t), validCreate("exhausted"))
	requireCode(t, codes.ResourceExhausted, err)
	_, err = r.machines().GetMachineStatus(callCtx(t), &driverv1alpha1.GetMachineStatusRequest{Machine: validMachine("x"), MachineClass: validClass()})
	requireCode(t, codes.NotFound, err)

	// The handling time of every call, by method; the codes are in the
	// handled counter.
	assert.Equal(t, uint64(3), histogramCount(t, reg, "CreateMachine"))
	assert.Equal(t, uint64(1), histogramCount(t, reg, "GetMachineStatus"))
	assert.Equal(t, uint64(0), histogramCount(t, reg, "DeleteMachine"))

	assert.Equal(t, 2.0, counterValue(t, reg, "grpc_server_handled_total",
		map[string]string{"grpc_method": "CreateMachine", "grpc_code": "OK"}))
	assert.Equal(t, 1.0, counterValue(t, reg, "grpc_server_handled_total",
		map[string]string{"grpc_method": "CreateMachine", "grpc_code": "ResourceExhausted"}))
	assert.Equal(t, 1.0, counterValue(t, reg, "grpc_server_handled_total",
		map[string]string{"grpc_method": "GetMachineStatus", "grpc_code": "NotFound"}))
	assert.Equal(t, 0.0, counterValue(t, reg, "grpc_server_handled_total",
		map[string]string{"grpc_method": "DeleteMachine", "grpc_code": "OK"}), "every method is pre-initialised")
}

func TestServersShareARegisterer(t *testing.T) {
	reg := prometheus.NewRegistry()
	first := startServer(t, newServer(t, newTestDriver(), WithMetricsRegisterer(reg)))
	second := startServer(t, newServer(t, newTestDriver(), WithMetricsRegisterer(reg)))
	for _, r := range []*running{first, second} {
		_, err := r.machines().CreateMachine(callCtx(t), validCreate("m"))
		require.NoError(t, err)
	}
	assert.Equal(t, uint64(2), histogramCount(t, reg, "CreateMachine"))
	assert.Equal(t, 2.0, counterValue(t, reg, "grpc_server_handled_total",
		map[string]string{"grpc_method": "CreateMachine", "grpc_code": "OK"}))
}

func TestMetricsNameCollisionIsAnError(t *testing.T) {
	reg := prometheus.NewRegistry()
	// A different collector under the same name, e.g. from the driver's own
	// code.
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "grpc_server_handling_seconds", Help: "other"}))
	_, err := NewServer(testInfo, newTestDriver(), WithMetricsRegisterer(reg))
	require.ErrorContains(t, err, "registering metrics")
}

func TestLogsNameMethodsButNeverSecrets(t *testing.T) {
	logs := &logBuffer{}
	r := startServer(t, newServer(t, fullDriver{newTestDriver()}, WithLogger(newLogger(logs))))

	// A successful call, a driver error, a validation error and a probe,
	// all carrying the canary in secret fields.
	_, err := r.machines().CreateMachine(callCtx(t), validCreate("logged-machine"))
	require.NoError(t, err)
	_, err = r.machines().CreateMachine(callCtx(t), validCreate("exhausted"))
	requireCode(t, codes.ResourceExhausted, err)
	invalid := validCreate("Not_A_DNS_Name")
	_, err = r.machines().CreateMachine(callCtx(t), invalid)
	requireCode(t, codes.InvalidArgument, err)
	_, err = r.machines().ListMachines(callCtx(t), &driverv1alpha1.ListMachinesRequest{
		MachineClass: validClass(), Secrets: map[string][]byte{"token": []byte(canary)},
	})
	require.NoError(t, err)
	update := validUpdate("updated-machine")
	update.Secrets = map[string][]byte{"token": []byte(canary)}
	_, err = r.machines().UpdateMachine(callCtx(t), update)
	require.NoError(t, err)
	_, err = r.identity().Probe(callCtx(t), &driverv1alpha1.ProbeRequest{})
	require.NoError(t, err)

	out := logs.String()
	for _, want := range []string{
		"CreateMachine", "ListMachines", "UpdateMachine", "updated-machine", "Probe", "grpc.code", "ResourceExhausted", "InvalidArgument",
		"grpc.time_ms", "logged-machine", `test:///logged-machine`, // request and response content
	} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, canary)
	assert.NotContains(t, out, base64.StdEncoding.EncodeToString([]byte(canary)))
	assert.NotContains(t, out, base64.StdEncoding.EncodeToString([]byte("#cloud-config\n# "+canary)))
	assert.Contains(t, out, "password", "secret names stay visible, their values do not")

	// One line per call.
	assert.Equal(t, 3, strings.Count(out, `"grpc.method":"CreateMachine"`))
	// The frequent successful probes are debug lines, other calls info.
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		switch {
		case strings.Contains(line, `"grpc.method":"Probe"`):
			assert.Contains(t, line, `"level":"DEBUG"`)
		case strings.Contains(line, `"grpc.method":"ListMachines"`):
			assert.Contains(t, line, `"level":"INFO"`)
		}
	}
}

func TestNewServerRejectsNilDriver(t *testing.T) {
	_, err := NewServer(testInfo, nil)
	require.ErrorContains(t, err, "driver is nil")
}

// bigListDriver lists more VMs than fit into a response.
type bigListDriver struct{ *testDriver }

func (d bigListDriver) ListMachines(context.Context, *driverv1alpha1.ListMachinesRequest) (*driverv1alpha1.ListMachinesResponse, error) {
	resp := &driverv1alpha1.ListMachinesResponse{}
	id := strings.Repeat("p", 2000)
	for range 9000 { // about 18 MB
		resp.Machines = append(resp.Machines, &driverv1alpha1.ListedMachine{ProviderId: id, MachineName: "m"})
	}
	return resp, nil
}

func TestOversizedResponseIsInternal(t *testing.T) {
	r := startServer(t, newServer(t, bigListDriver{newTestDriver()}))
	_, err := r.machines().ListMachines(callCtx(t), &driverv1alpha1.ListMachinesRequest{MachineClass: validClass()})
	requireCode(t, codes.Internal, err)
	assert.Contains(t, status.Convert(err).Message(), "larger than the Driver API limit of 16777216 bytes")
}
