package manager

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// mcmMetricNames are the 46 metric names of MCM's two binaries
// (machine-controller-manager pkg/metrics/metrics.go and
// pkg/util/provider/metrics/metrics.go), without the work queue, reflector
// and REST client metrics that machina serves under controller-runtime's
// and client-go's names (docs/operating.md, "Differences from MCM").
var mcmMetricNames = []string{
	// machine-controller-manager
	"mcm_machine_stale_machines_total",
	"mcm_machine_set_items_total",
	"mcm_machine_set_info",
	"mcm_machine_set_info_spec_replicas",
	"mcm_machine_set_info_spec_min_ready_seconds",
	"mcm_machine_set_status_available_replicas",
	"mcm_machine_set_status_fully_labelled_replicas",
	"mcm_machine_set_status_ready_replicas",
	"mcm_machine_set_status_replicas",
	"mcm_machine_set_status_condition",
	"mcm_machine_set_failed_machines",
	"mcm_machine_deployment_items_total",
	"mcm_machine_deployment_info",
	"mcm_machine_deployment_info_spec_paused",
	"mcm_machine_deployment_info_spec_replicas",
	"mcm_machine_deployment_info_spec_min_ready_seconds",
	"mcm_machine_deployment_info_spec_rolling_update_max_surge",
	"mcm_machine_deployment_info_spec_rolling_update_max_unavailable",
	"mcm_machine_deployment_info_spec_revision_history_limit",
	"mcm_machine_deployment_info_spec_progress_deadline_seconds",
	"mcm_machine_deployment_info_spec_rollback_to_revision",
	"mcm_machine_deployment_status_available_replicas",
	"mcm_machine_deployment_status_unavailable_replicas",
	"mcm_machine_deployment_status_ready_replicas",
	"mcm_machine_deployment_status_updated_replicas",
	"mcm_machine_deployment_status_collision_count",
	"mcm_machine_deployment_status_replicas",
	"mcm_machine_deployment_status_condition",
	"mcm_machine_deployment_failed_machines",
	"mcm_misc_scrape_failure_total",
	// machine-controller (the provider binary)
	"mcm_machine_controller_frozen",
	"mcm_machine_items_total",
	"mcm_machine_current_status_phase",
	"mcm_machine_info",
	"mcm_machine_status_condition",
	"mcm_machine_create_duration_seconds",
	"mcm_machine_initialize_duration_seconds",
	"mcm_machine_join_duration_seconds",
	"mcm_machine_delete_duration_seconds",
	"mcm_machine_drain_duration_seconds",
	"mcm_machine_num_failed_join",
	"mcm_cloud_api_requests_total",
	"mcm_cloud_api_requests_failed_total",
	"mcm_cloud_api_api_request_duration_seconds",
	"mcm_cloud_api_driver_request_duration_seconds",
	"mcm_cloud_api_driver_requests_failed_total",
}

// checkMCMMetricNames asserts that every MCM metric name is served: in the
// scrape body, or, for a metric with labels that has no sample yet (no
// machine has failed to join, no set lists a failed machine, the driver asks
// for no InitializeMachine), registered on the registry /metrics serves. A
// name is registered when a collector of that name cannot be added next to
// it; the meaning of each is tested where it is computed (TestStateMetrics,
// TestMCMParity, TestMetrics of the driver client).
func checkMCMMetricNames(t *testing.T, body string) {
	t.Helper()
	require.Len(t, mcmMetricNames, 46)
	var absent []string
	for _, name := range mcmMetricNames {
		if strings.Contains(body, "\n"+name+" ") || strings.Contains(body, "\n"+name+"{") ||
			strings.Contains(body, "\n"+name+"_bucket{") {
			continue
		}
		probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "probe of the name"})
		if err := ctrlmetrics.Registry.Register(probe); err == nil {
			ctrlmetrics.Registry.Unregister(probe)
			absent = append(absent, name)
		}
	}
	assert.Empty(t, absent, "MCM metrics the manager does not serve")
}

// checkConfigz asserts that /configz shows the effective flags and no
// credential.
func checkConfigz(t *testing.T, body string, opts Options) {
	t.Helper()
	var got map[string]map[string]string
	require.NoError(t, json.Unmarshal([]byte(body), &got), "/configz is JSON")
	flags := got["machina-manager"]
	require.NotEmpty(t, flags)
	assert.Equal(t, opts.MachineDrainTimeout.String(), flags["machine-drain-timeout"])
	assert.Equal(t, opts.Namespace, flags["namespace"])
	assert.Contains(t, flags, "machine-max-evict-retries")
	if c := opts.ControlConfig; c != nil {
		for _, secret := range []string{c.BearerToken, c.Password, string(c.KeyData)} {
			if secret != "" {
				assert.NotContains(t, body, secret, "a credential in /configz")
			}
		}
	}
}
