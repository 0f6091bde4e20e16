package driver

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

func TestMetrics(t *testing.T) {
	path := socketPath(t)
	d := newTestDriver()
	d.onMachineCall = func(_ context.Context, _ string, m *driverv1alpha1.Machine) error {
		if m.GetName() == "broken" {
			return status.Error(codes.Internal, "cloud API failed")
		}
		return nil
	}
	serve(t, path, d)
	reg := prometheus.NewRegistry()
	opts := testOptions(&logBuffer{})
	opts.Registerer = reg
	opts.Name = "pool-a"
	c := connect(t, path, opts)
	ctx := context.Background()

	_, err := c.CreateMachine(ctx, &driverv1alpha1.CreateMachineRequest{Machine: testMachine("m1"), MachineClass: testClass()})
	require.NoError(t, err)
	_, err = c.CreateMachine(ctx, &driverv1alpha1.CreateMachineRequest{Machine: testMachine("broken"), MachineClass: testClass()})
	require.Error(t, err)
	_, err = c.DeleteMachine(ctx, &driverv1alpha1.DeleteMachineRequest{Machine: testMachine("m1"), MachineClass: testClass()})
	require.NoError(t, err)
	// Refused locally: not a driver call, so not measured.
	_, err = c.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{MachineClass: testClass()})
	require.Equal(t, codes.Unimplemented, Code(err))

	// The gRPC client metrics: every RPC sent, identity RPCs included, with
	// its code in the handled counter and its time in the histogram.
	assert.Equal(t, 1.0, counterValue(t, reg, "grpc_client_handled_total", map[string]string{"grpc_method": "CreateMachine", "grpc_code": "OK"}))
	assert.Equal(t, 1.0, counterValue(t, reg, "grpc_client_handled_total", map[string]string{"grpc_method": "CreateMachine", "grpc_code": "Internal"}))
	assert.Equal(t, 1.0, counterValue(t, reg, "grpc_client_handled_total", map[string]string{"grpc_method": "DeleteMachine", "grpc_code": "OK"}))
	assert.Equal(t, 1.0, counterValue(t, reg, "grpc_client_handled_total", map[string]string{"grpc_method": "GetPluginInfo", "grpc_code": "OK"}))
	assert.Equal(t, 0.0, counterValue(t, reg, "grpc_client_handled_total", map[string]string{"grpc_method": "ListMachines", "grpc_code": "Unimplemented"}))
	assert.Equal(t, uint64(2), histogramCount(t, reg, "grpc_client_handling_seconds", map[string]string{"grpc_method": "CreateMachine", "grpc_service": "machina.driver.v1alpha1.MachineService"}))
	assert.Equal(t, uint64(1), histogramCount(t, reg, "grpc_client_handling_seconds", map[string]string{"grpc_method": "DeleteMachine"}))
	assert.Equal(t, uint64(1), histogramCount(t, reg, "grpc_client_handling_seconds", map[string]string{"grpc_method": "GetPluginInfo", "grpc_service": "machina.driver.v1alpha1.IdentityService"}))
	assert.Equal(t, uint64(0), histogramCount(t, reg, "grpc_client_handling_seconds", map[string]string{"grpc_method": "ListMachines"}))

	assert.Equal(t, uint64(2), histogramCount(t, reg, "mcm_cloud_api_driver_request_duration_seconds", map[string]string{"provider": testDriverName, "operation": "create_machine"}))
	assert.Equal(t, uint64(1), histogramCount(t, reg, "mcm_cloud_api_driver_request_duration_seconds", map[string]string{"provider": testDriverName, "operation": "delete_machine"}))
	// Identity RPCs have no MCM counterpart.
	assert.Equal(t, uint64(0), histogramCount(t, reg, "mcm_cloud_api_driver_request_duration_seconds", map[string]string{"provider": testDriverName, "operation": "GetPluginInfo"}))

	// MCM's cloud API metrics count the same calls, the service being the
	// call; the duration holds successful calls only.
	assert.Equal(t, 2.0, counterValue(t, reg, "mcm_cloud_api_requests_total", map[string]string{"provider": testDriverName, "service": "create_machine"}))
	assert.Equal(t, 1.0, counterValue(t, reg, "mcm_cloud_api_requests_failed_total", map[string]string{"provider": testDriverName, "service": "create_machine"}))
	assert.Equal(t, 0.0, counterValue(t, reg, "mcm_cloud_api_requests_failed_total", map[string]string{"provider": testDriverName, "service": "delete_machine"}))
	assert.Equal(t, uint64(1), histogramCount(t, reg, "mcm_cloud_api_api_request_duration_seconds", map[string]string{"provider": testDriverName, "service": "create_machine"}))
	assert.Equal(t, 0.0, counterValue(t, reg, "mcm_cloud_api_requests_total", map[string]string{"provider": testDriverName, "service": "GetPluginInfo"}))

	// Every series carries the driver's name.
	assert.Equal(t, 1.0, counterValue(t, reg, "grpc_client_handled_total", map[string]string{"grpc_method": "CreateMachine", "grpc_code": "OK", "driver": "pool-a"}))
	assert.Equal(t, uint64(2), histogramCount(t, reg, "mcm_cloud_api_driver_request_duration_seconds", map[string]string{"driver": "pool-a", "operation": "create_machine"}))

	c2, err := registerClientMetrics(reg, "pool-a", newClientMetrics()) // a second client on the same registry shares the collectors
	require.NoError(t, err)
	assert.Equal(t, 1.0, testutil.ToFloat64(c2.mcmFailed.WithLabelValues(testDriverName, "create_machine", "13")))
	assert.Equal(t, 1, testutil.CollectAndCount(c2.mcmFailed), "only the failed create is counted")
}

func TestMetricsSharedRegistry(t *testing.T) {
	path := socketPath(t)
	serve(t, path, newTestDriver())
	reg := prometheus.NewRegistry()
	opts := testOptions(&logBuffer{})
	opts.Registerer = reg
	opts.Name = "pool-a"
	connect(t, path, opts)
	connect(t, path, opts) // must not fail with "duplicate metrics collector registration"

	// Probe runs once per Connect, both land in the same family.
	assert.Equal(t, uint64(2), histogramCount(t, reg, "grpc_client_handling_seconds", map[string]string{"grpc_method": "Probe"}))
	assert.Equal(t, 2.0, counterValue(t, reg, "grpc_client_handled_total", map[string]string{"grpc_method": "Probe", "grpc_code": "OK"}))
}

// Without a configured name, the series are labelled with the name the
// driver gives itself, and two drivers of one registry keep apart.
func TestMetricsPerDriver(t *testing.T) {
	pathA, pathB := socketPath(t), socketPath(t)
	serve(t, pathA, newTestDriver())
	serve(t, pathB, newTestDriver())
	reg := prometheus.NewRegistry()
	opts := testOptions(&logBuffer{})
	opts.Registerer = reg
	a := connect(t, pathA, opts)
	assert.Equal(t, testDriverName, a.Name())
	opts.Name = "pool-b"
	b := connect(t, pathB, opts)
	assert.Equal(t, "pool-b", b.Name())

	ctx := context.Background()
	_, err := a.CreateMachine(ctx, &driverv1alpha1.CreateMachineRequest{Machine: testMachine("m1"), MachineClass: testClass()})
	require.NoError(t, err)
	for _, name := range []string{"m2", "m3"} {
		_, err = b.CreateMachine(ctx, &driverv1alpha1.CreateMachineRequest{Machine: testMachine(name), MachineClass: testClass()})
		require.NoError(t, err)
	}
	assert.Equal(t, 1.0, counterValue(t, reg, "grpc_client_handled_total", map[string]string{"grpc_method": "CreateMachine", "driver": testDriverName}))
	assert.Equal(t, 2.0, counterValue(t, reg, "grpc_client_handled_total", map[string]string{"grpc_method": "CreateMachine", "driver": "pool-b"}))
	assert.Equal(t, uint64(2), histogramCount(t, reg, "mcm_cloud_api_driver_request_duration_seconds", map[string]string{"driver": "pool-b", "operation": "create_machine"}))
	// Both measure their connect sequence.
	assert.Equal(t, 1.0, counterValue(t, reg, "grpc_client_handled_total", map[string]string{"grpc_method": "GetPluginInfo", "driver": testDriverName}))
	assert.Equal(t, 1.0, counterValue(t, reg, "grpc_client_handled_total", map[string]string{"grpc_method": "Probe", "driver": "pool-b"}))
}

func TestMetricsConflictingRegistration(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "grpc_client_handling_seconds", Help: "not a histogram"}))
	_, err := registerClientMetrics(reg, "pool-a", newClientMetrics())
	require.Error(t, err)
}

// histogramCount returns the sample count of the histogram series of family
// name whose labels include labels, or 0 when there is no such series.
func histogramCount(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) uint64 {
	t.Helper()
	if m := series(t, reg, name, labels); m != nil {
		return m.GetHistogram().GetSampleCount()
	}
	return 0
}

// counterValue returns the value of the counter series of family name whose
// labels include labels, or 0 when there is no such series.
// MCM's request and failure counters of every call exist at 0 once the
// driver is connected: rate() sees the first failure.
func TestCloudAPICountersStartAtZero(t *testing.T) {
	path := socketPath(t)
	serve(t, path, newTestDriver())
	reg := prometheus.NewRegistry()
	opts := testOptions(&logBuffer{})
	opts.Registerer = reg
	connect(t, path, opts)
	for _, name := range []string{"mcm_cloud_api_requests_total", "mcm_cloud_api_requests_failed_total"} {
		for _, service := range mcmOperations {
			m := series(t, reg, name, map[string]string{"provider": testDriverName, "service": service})
			require.NotNil(t, m, "%s{service=%q} is served before any call", name, service)
			assert.Zero(t, m.GetCounter().GetValue())
		}
	}
}

func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	if m := series(t, reg, name, labels); m != nil {
		return m.GetCounter().GetValue()
	}
	return 0
}

// series returns the one series of family name whose labels include
// labels, or nil; more than one fails the test.
func series(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	var found *dto.Metric
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			got := make(map[string]string)
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue metrics
				}
			}
			require.Nil(t, found, "more than one series of %s with labels %v", name, labels)
			found = m
		}
	}
	return found
}
