package machinedeployment_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/machinedeployment"
)

// testOutOfRangeStrategy creates deployments whose maxSurge or maxUnavailable
// the API server accepts (the CRD allows any integer, and any digits followed
// by '%') but no rollout
// can use: each must be refused with Progressing=False/InvalidStrategy and a
// Warning event naming the value, and get no machine set, rather than roll out
// with a wrapped-around or clamped count. Fixing the value lets it roll out.
func (s *suite) testOutOfRangeStrategy(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name               string
		replicas           int32
		surge, unavailable intstr.IntOrString
		want               string
	}{
		// A surge of -2147483647 before the fix: the percentage overflowed
		// int32 after the negative check.
		{"surge-percent", 3, intstr.FromString("71582788300%"), intstr.FromInt32(0), "maxSurge"},
		// The minimum available exceeded replicas before the fix.
		{"unavailable-percent", 3, intstr.FromInt32(1), intstr.FromString("100000000000%"), "maxUnavailable"},
		{"unavailable-over-100", 3, intstr.FromInt32(1), intstr.FromString("101%"), "must not be more than 100%"},
		// replicas+maxSurge wrapped around before the fix.
		{"surge-sum", 3, intstr.FromInt32(2147483647), intstr.FromInt32(0), "exceeds the largest machine count"},
		{"surge-negative", 3, intstr.FromInt32(-1), intstr.FromInt32(0), "must not be negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns := s.namespace(t) // waitComplete counts the namespace's machines
			s.joiner(t, ns, 0)
			d := newDeployment(ns, c.name, c.replicas)
			d.Spec.Strategy.RollingUpdate = &v1alpha1.RollingUpdateMachineDeployment{
				UpdateConfiguration: v1alpha1.UpdateConfiguration{MaxSurge: &c.surge, MaxUnavailable: &c.unavailable}}
			require.NoError(t, s.c.Create(ctx, d), "the API server accepts the value; the controller must refuse it")
			var cond *v1alpha1.MachineDeploymentCondition
			require.Eventually(t, func() bool {
				s.get(t, d)
				cond = condition(d, v1alpha1.MachineDeploymentProgressing)
				return d.Status.ObservedGeneration == d.Generation && cond != nil && cond.Reason == machinedeployment.ReasonInvalidStrategy
			}, waitTimeout, poll, "no InvalidStrategy condition; conditions: %+v", d.Status.Conditions)
			assert.Equal(t, v1alpha1.ConditionFalse, cond.Status)
			assert.Contains(t, cond.Message, c.want)
			s.waitEvent(t, d, machinedeployment.ReasonInvalidStrategy, c.want)
			assert.Empty(t, s.setsOf(t, d), "a machine set was created for a refused strategy")

			// Fixed, the deployment rolls out and the condition goes.
			s.update(t, d, func(d *v1alpha1.MachineDeployment) {
				d.Spec.Strategy.RollingUpdate = &v1alpha1.RollingUpdateMachineDeployment{UpdateConfiguration: v1alpha1.UpdateConfiguration{
					MaxSurge: ptr(intstr.FromString("50%")), MaxUnavailable: ptr(intstr.FromInt32(0))}}
			})
			s.waitComplete(t, d)
			require.Eventually(t, func() bool {
				s.get(t, d)
				c := condition(d, v1alpha1.MachineDeploymentProgressing)
				return c != nil && c.Reason == machinedeployment.ReasonNewMachineSetAvailable
			}, waitTimeout, poll, "Progressing did not recover; conditions: %+v", d.Status.Conditions)
			sets := s.setsOf(t, d)
			require.Len(t, sets, 1)
			assert.Equal(t, "3", sets[0].Annotations[v1alpha1.DesiredReplicasAnnotation])
			assert.Equal(t, "5", sets[0].Annotations[v1alpha1.MaxReplicasAnnotation], "3 replicas + 50% surge rounded up")
		})
	}
}

func ptr[T any](v T) *T { return &v }

// setsOf lists the machine sets labelled for the deployment.
func (s *suite) setsOf(t *testing.T, d *v1alpha1.MachineDeployment) []v1alpha1.MachineSet {
	t.Helper()
	list := &v1alpha1.MachineSetList{}
	require.NoError(t, s.c.List(context.Background(), list, client.InNamespace(d.Namespace), client.MatchingLabels(d.Spec.Selector.MatchLabels)))
	return list.Items
}

// waitEvent waits for a Warning event on the deployment with the reason and
// a message containing text.
func (s *suite) waitEvent(t *testing.T, d *v1alpha1.MachineDeployment, reason, text string) {
	t.Helper()
	var seen []string
	require.Eventually(t, func() bool {
		list := &corev1.EventList{}
		if err := s.c.List(context.Background(), list, client.InNamespace(d.Namespace)); err != nil {
			return false
		}
		seen = seen[:0]
		for _, e := range list.Items {
			if e.InvolvedObject.Name != d.Name {
				continue
			}
			seen = append(seen, e.Reason+": "+e.Message)
			if e.Type == corev1.EventTypeWarning && e.Reason == reason && strings.Contains(e.Message, text) {
				return true
			}
		}
		return false
	}, waitTimeout, poll, "no %s event containing %q; events: %v", reason, text, seen)
}
