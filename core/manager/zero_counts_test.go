package manager

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
)

// TestZeroCountsStored: a deployment scaled to 0 stores counts of 0 in its
// status and its set's, so that the printer columns of `kubectl get md,ms`
// show 0, not a blank (issue 32).
func TestZeroCountsStored(t *testing.T) {
	logTo(t)
	env := testenv.Start(t)
	w := newIPWorld(t, env)
	d := w.deployment("web", 1, v1alpha1.OrchestrationTypeAuto, intstr.FromInt32(1))
	w.waitMachines(1, v1alpha1.MachineRunning)
	w.updateDeployment(d, func(cur *v1alpha1.MachineDeployment) { cur.Spec.Replicas = 0 })
	w.eventually(func() bool { return len(w.machineList()) == 0 }, waitFor, "the machine was not deleted")

	stored := func(kind, name string, fields ...string) bool {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(kind))
		if env.Client.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: name}, u) != nil {
			return false
		}
		for _, f := range fields {
			v, found, err := unstructured.NestedInt64(u.Object, "status", f)
			if !found || err != nil || v != 0 {
				return false
			}
		}
		return true
	}
	w.eventually(func() bool {
		return stored("MachineDeployment", d.Name, "replicas", "updatedReplicas", "readyReplicas", "availableReplicas")
	}, waitFor, "the deployment's counts of 0 are not stored")
	sets := w.setList()
	require.Len(t, sets, 1)
	assert.Eventually(t, func() bool {
		return stored("MachineSet", sets[0].Name, "replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas")
	}, waitFor, tick, "the set's counts of 0 are not stored")
}
