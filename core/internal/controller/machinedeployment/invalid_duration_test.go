package machinedeployment_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/machinedeployment"
	"github.com/machina-io/machina/core/internal/controller/machineset"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
)

// TestInvalidDurationStopsOnlyItsDeployment stores a MachineDeployment whose
// template drainTimeout Go cannot parse, as one written before the schema
// refused such values, and only then starts the controllers (a manager
// restart): they used to fail their list of MachineDeployments, so that no
// deployment of the namespace scaled. Now the other deployment of the
// namespace scales, the bad one alone is refused with an event and the
// Progressing condition naming the field, and it scales once fixed. The API
// server refuses the same value in a new object.
func TestInvalidDurationStopsOnlyItsDeployment(t *testing.T) {
	ctx := context.Background()
	env := testenv.Start(t)
	s := &suite{env: env, c: env.Client}
	ns := s.namespace(t)

	bad := newDeployment(ns, "bad", 1)
	u := toUnstructured(t, bad)
	require.NoError(t, unstructured.SetNestedField(u.Object, "9999999999h", "spec", "template", "spec", "drainTimeout"))
	err := s.c.Create(ctx, u.DeepCopy())
	require.Error(t, err, "the API server refuses the value")
	assert.Contains(t, err.Error(), "spec.template.spec.drainTimeout")
	env.CreateBypassingRules(t, u, "machinedeployments."+v1alpha1.GroupVersion.Group, "spec", "template", "spec", "drainTimeout")

	controllertest.StartManager(t, env, func(mgr ctrl.Manager) error {
		if err := (&machineset.Reconciler{}).SetupWithManager(mgr, setup.Env{Workers: 4}); err != nil {
			return err
		}
		return (&machinedeployment.Reconciler{
			Target:  mgr.GetClient(),
			Pods:    mgr.GetAPIReader(),
			Options: machinedeployment.DefaultOptions(),
		}).SetupWithManager(mgr, setup.Env{Workers: 4})
	})
	s.joiner(t, ns, 0)

	good := newDeployment(ns, "good", 2)
	require.NoError(t, s.c.Create(ctx, good))
	require.Eventually(t, func() bool {
		s.get(t, good)
		return good.Status.ObservedGeneration == good.Generation && good.Status.AvailableReplicas == 2
	}, waitTimeout, poll, "the good deployment of the namespace did not scale")
	s.update(t, good, func(d *v1alpha1.MachineDeployment) { d.Spec.Replicas = 3 })
	require.Eventually(t, func() bool {
		s.get(t, good)
		return good.Status.ObservedGeneration == good.Generation && good.Status.AvailableReplicas == 3
	}, waitTimeout, poll, "the good deployment did not scale up")

	s.get(t, bad)
	c := condition(bad, v1alpha1.MachineDeploymentProgressing)
	require.NotNil(t, c)
	assert.Equal(t, v1alpha1.ConditionFalse, c.Status)
	assert.Equal(t, machinedeployment.ReasonInvalidDuration, c.Reason)
	assert.Contains(t, c.Message, `spec.template.spec.drainTimeout: "9999999999h" is not a duration Go can parse`)
	s.waitEvent(t, bad, machinedeployment.ReasonInvalidDuration, "spec.template.spec.drainTimeout")
	assert.Empty(t, s.setsOf(t, bad), "nothing is created for the refused deployment")

	// Fixed (the schema admits a change to a valid value): it scales.
	fix := client.MergeFrom(bad.DeepCopy())
	bad.Spec.Template.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineDrainTimeout: v1alpha1.NewDuration(time.Hour)}
	require.NoError(t, s.c.Patch(ctx, bad, fix))
	require.Eventually(t, func() bool {
		s.get(t, bad)
		c := condition(bad, v1alpha1.MachineDeploymentProgressing)
		return bad.Status.AvailableReplicas == 1 && (c == nil || c.Reason != machinedeployment.ReasonInvalidDuration)
	}, waitTimeout, poll, "the fixed deployment did not scale")
}

func toUnstructured(t *testing.T, obj client.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	u.SetKind("MachineDeployment")
	return u
}
