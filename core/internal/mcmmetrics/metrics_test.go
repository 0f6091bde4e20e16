package mcmmetrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// The labels come from the machine and its class's nodeTemplate; without a
// class the instance type is empty and the sample is still taken.
func TestLabelsOf(t *testing.T) {
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Labels: map[string]string{v1alpha1.MachineDeploymentNameLabel: "workers"}}}
	m.Spec.NodeTemplateSpec.Labels = map[string]string{"topology.kubernetes.io/zone": "zone-a"}
	class := &v1alpha1.MachineClass{NodeTemplate: &v1alpha1.NodeTemplate{InstanceType: "m-large"}}
	assert.Equal(t, Labels{"ns", "workers", "m-large", "zone-a"}, LabelsOf(m, class))
	assert.Equal(t, Labels{"ns", "workers", "", "zone-a"}, LabelsOf(m, nil))
	assert.Equal(t, Labels{"ns", "workers", "", "zone-a"}, LabelsOf(m, &v1alpha1.MachineClass{}))
}

// Each gauge holds the last value for its labels, in whole seconds; the
// drain gauge is labelled by namespace and deployment only.
func TestGaugesHoldTheLastValueInSeconds(t *testing.T) {
	l := Labels{"mcmmetrics-test", "workers", "m-large", "zone-a"}
	ObserveCreate(l, 90*time.Second+400*time.Millisecond)
	ObserveJoin(l, 10*time.Minute)
	ObserveJoin(l, 2*time.Minute+600*time.Millisecond)
	ObserveDrain(l, 1500*time.Millisecond)
	CountFailedJoin(l)
	CountFailedJoin(l)
	values := []string{l.Namespace, l.MachineDeployment, l.InstanceType, l.Zone}
	assert.Equal(t, 90.0, testutil.ToFloat64(CreateDuration.WithLabelValues(values...)))
	assert.Equal(t, 121.0, testutil.ToFloat64(JoinDuration.WithLabelValues(values...)), "the last machine's, rounded")
	assert.Equal(t, 2.0, testutil.ToFloat64(DrainDuration.WithLabelValues(l.Namespace, l.MachineDeployment)))
	assert.Equal(t, 2.0, testutil.ToFloat64(FailedJoin.WithLabelValues(values...)))
}

// MCM's dashboards query these names, labels and help strings: they must
// not drift.
func TestNamesAndHelpAreMCMs(t *testing.T) {
	l := Labels{"mcmmetrics-names", "d", "i", "z"}
	ObserveInitialize(l, time.Second)
	ObserveDelete(l, time.Second)
	want := `
# HELP mcm_machine_initialize_duration_seconds Seconds from a Machine's creation until the driver had initialized its VM (last machine, MCM's name).
# TYPE mcm_machine_initialize_duration_seconds gauge
mcm_machine_initialize_duration_seconds{instance_type="i",machine_deployment="d",namespace="mcmmetrics-names",zone="z"} 1
`
	require.NoError(t, testutil.CollectAndCompare(InitializeDuration, strings.NewReader(want)))
	want = `
# HELP mcm_machine_delete_duration_seconds Seconds from a Machine's deletion timestamp until the driver had deleted its VM (last machine, MCM's name).
# TYPE mcm_machine_delete_duration_seconds gauge
mcm_machine_delete_duration_seconds{instance_type="i",machine_deployment="d",namespace="mcmmetrics-names",zone="z"} 1
`
	require.NoError(t, testutil.CollectAndCompare(DeleteDuration, strings.NewReader(want)))
}
