package driver

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
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

	assert.Equal(t, uint64(1), histogramCount(t, reg, "machina_driver_request_duration_seconds", map[string]string{"method": "CreateMachine", "code": "OK"}))
	assert.Equal(t, uint64(1), histogramCount(t, reg, "machina_driver_request_duration_seconds", map[string]string{"method": "CreateMachine", "code": "Internal"}))
	assert.Equal(t, uint64(1), histogramCount(t, reg, "machina_driver_request_duration_seconds", map[string]string{"method": "DeleteMachine", "code": "OK"}))
	assert.Equal(t, uint64(1), histogramCount(t, reg, "machina_driver_request_duration_seconds", map[string]string{"method": "GetPluginInfo", "code": "OK"}))
	assert.Equal(t, uint64(0), histogramCount(t, reg, "machina_driver_request_duration_seconds", map[string]string{"method": "ListMachines", "code": "Unimplemented"}))

	assert.Equal(t, uint64(2), histogramCount(t, reg, "mcm_cloud_api_driver_request_duration_seconds", map[string]string{"provider": testDriverName, "operation": "create_machine"}))
	assert.Equal(t, uint64(1), histogramCount(t, reg, "mcm_cloud_api_driver_request_duration_seconds", map[string]string{"provider": testDriverName, "operation": "delete_machine"}))
	// Identity RPCs have no MCM counterpart.
	assert.Equal(t, uint64(0), histogramCount(t, reg, "mcm_cloud_api_driver_request_duration_seconds", map[string]string{"provider": testDriverName, "operation": "GetPluginInfo"}))

	c2, err := newCallMetrics(reg) // a second client on the same registry shares the collectors
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
	connect(t, path, opts)
	connect(t, path, opts) // must not fail with "duplicate metrics collector registration"

	// Probe runs once per Connect, both land in the same family.
	assert.Equal(t, uint64(2), histogramCount(t, reg, "machina_driver_request_duration_seconds", map[string]string{"method": "Probe", "code": "OK"}))
}

func TestMetricsConflictingRegistration(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "machina_driver_request_duration_seconds", Help: "not a histogram"}))
	_, err := newCallMetrics(reg)
	require.Error(t, err)
}

// histogramCount returns the sample count of the histogram series of family
// name with exactly labels, or 0 when there is no such series.
func histogramCount(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) uint64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			got := make(map[string]string)
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if assert.ObjectsAreEqual(labels, got) {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}
