package machinedeployment_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// testReplaceDrifted: a machine whose VM drifted from its class (the class
// update controller's ClassUpdated=False, NeedsNewVM) is left alone without
// spec.disruption.replaceDrifted, and replaced with it, within
// maxUnavailable; the other machines stay.
func (s *suite) testReplaceDrifted(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	s.joiner(t, ns, 0)
	d := newDeployment(ns, "drift", 3)
	setRollingBounds(d, 0, 1)
	require.NoError(t, s.c.Create(ctx, d))
	s.waitComplete(t, d)
	machines := s.machines(t, ns)
	require.Len(t, machines, 3)

	// What the class update controller writes when the driver answers
	// needs_new_vm.
	drifted := &machines[0]
	meta.SetStatusCondition(&drifted.Status.MachineConditions, metav1.Condition{
		Type: v1alpha1.MachineConditionClassUpdated, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ClassUpdateReasonNeedsNewVM, Message: "the image differs",
	})
	require.NoError(t, s.c.Status().Update(ctx, drifted))
	// The drift wakes the deployment (driftChanged); off by default, it
	// replaces nothing: the deployment settles with the machine kept.
	s.waitComplete(t, d)
	cur := &v1alpha1.Machine{}
	require.NoError(t, s.c.Get(ctx, client.ObjectKeyFromObject(drifted), cur))
	assert.Nil(t, cur.DeletionTimestamp, "a drifted machine was replaced without spec.disruption.replaceDrifted")

	s.update(t, d, func(d *v1alpha1.MachineDeployment) {
		d.Spec.Disruption = &v1alpha1.MachineDeploymentDisruption{ReplaceDrifted: true}
	})
	require.Eventually(t, func() bool {
		err := s.c.Get(ctx, client.ObjectKeyFromObject(drifted), cur)
		return apierrors.IsNotFound(err) || (err == nil && cur.DeletionTimestamp != nil)
	}, waitTimeout, poll, "the drifted machine %s was not replaced", drifted.Name)
	s.expectEvent(t, ns, "DriftReplaced")
	s.waitComplete(t, d)
	for _, m := range machines[1:] {
		require.NoError(t, s.c.Get(ctx, client.ObjectKeyFromObject(&m), cur), "machine %s that did not drift was deleted", m.Name)
		assert.Nil(t, cur.DeletionTimestamp, "machine %s that did not drift was deleted", m.Name)
	}
	assert.Len(t, s.machines(t, ns), 3, "the set replaced the drifted machine")
}
