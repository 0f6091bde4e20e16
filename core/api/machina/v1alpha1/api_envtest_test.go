package v1alpha1_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
	machinev1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
)

func check(name string, mutate func(*machinaio.MachineHealthCheck)) *machinaio.MachineHealthCheck {
	mhc := &machinaio.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: machinaio.MachineHealthCheckSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"name": "workers"}},
			UnhealthyNodeConditions: []machinaio.UnhealthyNodeCondition{
				{Type: "Ready", Status: metav1.ConditionFalse, Timeout: *machinev1alpha1.NewDuration(300e9)},
			},
		},
	}
	if mutate != nil {
		mutate(mhc)
	}
	return mhc
}

// TestMachineHealthCheckSchema installs the generated CRD in a real
// kube-apiserver and checks its defaults and the checks of its schema.
func TestMachineHealthCheckSchema(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	ctx := t.Context()

	t.Run("defaults", func(t *testing.T) {
		mhc := check("defaults", nil)
		require.NoError(t, c.Create(ctx, mhc))
		got := &machinaio.MachineHealthCheck{}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(mhc), got))
		require.NotNil(t, got.Spec.NodeStartupTimeout)
		assert.Equal(t, "10m0s", got.Spec.NodeStartupTimeout.Duration.String())
		assert.Nil(t, got.Spec.MaxUnhealthy, "maxUnhealthy has no schema default: it would clash with unhealthyRange")
	})

	t.Run("accepted", func(t *testing.T) {
		for name, mutate := range map[string]func(*machinaio.MachineHealthCheck){
			"percent": func(m *machinaio.MachineHealthCheck) { v := intstr.FromString("40%"); m.Spec.MaxUnhealthy = &v },
			"count":   func(m *machinaio.MachineHealthCheck) { v := intstr.FromInt32(2); m.Spec.MaxUnhealthy = &v },
			"range":   func(m *machinaio.MachineHealthCheck) { m.Spec.UnhealthyRange = "[1-3]" },
			"expr": func(m *machinaio.MachineHealthCheck) {
				m.Spec.Selector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "name", Operator: metav1.LabelSelectorOpExists}}}
			},
			"nostartup": func(m *machinaio.MachineHealthCheck) { m.Spec.NodeStartupTimeout = machinev1alpha1.NewDuration(0) },
			"template": func(m *machinaio.MachineHealthCheck) {
				m.Spec.RemediationTemplate = &machinaio.RemediationTemplateReference{
					APIVersion: "infrastructure.cluster.x-k8s.io/v1beta1", Kind: "Metal3RemediationTemplate", Name: "reboot"}
			},
		} {
			require.NoError(t, c.Create(ctx, check("ok-"+name, mutate)), name)
		}
	})

	t.Run("refused", func(t *testing.T) {
		for name, tc := range map[string]struct {
			mutate func(*machinaio.MachineHealthCheck)
			want   string
		}{
			"both limits": {func(m *machinaio.MachineHealthCheck) {
				v := intstr.FromString("40%")
				m.Spec.MaxUnhealthy, m.Spec.UnhealthyRange = &v, "[1-3]"
			}, "maxUnhealthy and unhealthyRange are mutually exclusive"},
			"empty selector": {func(m *machinaio.MachineHealthCheck) { m.Spec.Selector = metav1.LabelSelector{} }, "selector must not be empty"},
			"percent over 100": {func(m *machinaio.MachineHealthCheck) { v := intstr.FromString("140%"); m.Spec.MaxUnhealthy = &v },
				"maxUnhealthy must be"},
			"negative count": {func(m *machinaio.MachineHealthCheck) { v := intstr.FromInt32(-1); m.Spec.MaxUnhealthy = &v },
				"maxUnhealthy must be"},
			"bad range":  {func(m *machinaio.MachineHealthCheck) { m.Spec.UnhealthyRange = "1-3" }, "spec.unhealthyRange"},
			"bad status": {func(m *machinaio.MachineHealthCheck) { m.Spec.UnhealthyNodeConditions[0].Status = "Maybe" }, "spec.unhealthyNodeConditions[0].status"},
			"empty type": {func(m *machinaio.MachineHealthCheck) { m.Spec.UnhealthyNodeConditions[0].Type = "" }, "spec.unhealthyNodeConditions[0].type"},
			"bad timeout": {func(m *machinaio.MachineHealthCheck) {
				m.Spec.UnhealthyNodeConditions[0].Timeout = machinev1alpha1.Duration{Raw: `"soon"`}
			}, "must be a Go duration"},
			"bad startup": {func(m *machinaio.MachineHealthCheck) {
				m.Spec.NodeStartupTimeout = &machinev1alpha1.Duration{Raw: `"-5m"`}
			}, "must be a Go duration"},
			"template kind": {func(m *machinaio.MachineHealthCheck) {
				m.Spec.RemediationTemplate = &machinaio.RemediationTemplateReference{APIVersion: "x.io/v1", Kind: "Template", Name: "t"}
			}, "kind must end in Template"},
			"template core": {func(m *machinaio.MachineHealthCheck) {
				m.Spec.RemediationTemplate = &machinaio.RemediationTemplateReference{APIVersion: "v1", Kind: "PodTemplate", Name: "t"}
			}, "apiVersion must be group/version"},
			"template name": {func(m *machinaio.MachineHealthCheck) {
				m.Spec.RemediationTemplate = &machinaio.RemediationTemplateReference{APIVersion: "x.io/v1", Kind: "XTemplate"}
			}, "spec.remediationTemplate.name"},
		} {
			err := c.Create(ctx, check("bad-"+strings.ReplaceAll(name, " ", "-"), tc.mutate))
			require.Error(t, err, name)
			assert.Contains(t, err.Error(), tc.want, name)
		}
	})

	t.Run("status subresource", func(t *testing.T) {
		mhc := check("status", nil)
		require.NoError(t, c.Create(ctx, mhc))
		mhc.Status.ExpectedMachines = 5
		mhc.Status.Conditions = []metav1.Condition{{Type: machinaio.RemediationAllowedCondition, Status: metav1.ConditionFalse,
			Reason: machinaio.ReasonTooManyUnhealthy, Message: "3 of 5 unhealthy", LastTransitionTime: metav1.Now()}}
		require.NoError(t, c.Status().Update(ctx, mhc))
		got := &machinaio.MachineHealthCheck{}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(mhc), got))
		assert.Equal(t, int32(5), got.Status.ExpectedMachines)
		require.Len(t, got.Status.Conditions, 1)
	})
}
