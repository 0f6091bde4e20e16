package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// A failed in-place update stops `rollout status` in Manual (the machines
// wait for the user) and is printed while it waits in Auto (the manager
// replaces them).
func TestRolloutStatusInPlaceFailed(t *testing.T) {
	d := &v1alpha1.MachineDeployment{}
	d.Name = "web"
	d.Spec.Replicas = 2
	d.Spec.Strategy.InPlaceUpdate = &v1alpha1.InPlaceUpdateMachineDeployment{OrchestrationType: v1alpha1.OrchestrationTypeAuto}
	d.Status.Replicas, d.Status.UpdatedReplicas = 2, 1
	d.Status.Conditions = []v1alpha1.MachineDeploymentCondition{{
		Type: v1alpha1.MachineDeploymentProgressing, Status: v1alpha1.ConditionFalse, Reason: "InPlaceUpdateFailed",
		Message: "machine web-a failed its in-place update (simulated failure)",
	}}
	msg, done, err := rolloutStatus(d)
	require.NoError(t, err)
	assert.False(t, done)
	assert.Contains(t, msg, "web-a failed its in-place update (simulated failure)")

	d.Spec.Strategy.InPlaceUpdate.OrchestrationType = v1alpha1.OrchestrationTypeManual
	_, done, err = rolloutStatus(d)
	assert.False(t, done)
	require.ErrorContains(t, err, `machinedeployment "web": in-place update failed: machine web-a failed its in-place update (simulated failure)`)
}
