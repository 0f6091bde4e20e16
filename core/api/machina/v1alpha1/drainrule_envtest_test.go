package v1alpha1_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
)

func drainRule(name string, mutate func(*machinaio.MachineDrainRule)) *machinaio.MachineDrainRule {
	r := &machinaio.MachineDrainRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: machinaio.MachineDrainRuleSpec{
			Drain: machinaio.MachineDrainRuleDrain{Behavior: machinaio.DrainBehaviorDrain, Order: ptr.To[int32](10)},
			Pods:  []machinaio.MachineDrainRulePodSelector{{Selector: &machinaio.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}},
		},
	}
	if mutate != nil {
		mutate(r)
	}
	return r
}

// TestMachineDrainRuleSchema installs the generated CRD in a real
// kube-apiserver and checks what its schema accepts and refuses.
func TestMachineDrainRuleSchema(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	ctx := t.Context()

	for name, mutate := range map[string]func(*machinaio.MachineDrainRule){
		"order":    nil,
		"negative": func(r *machinaio.MachineDrainRule) { r.Spec.Drain.Order = ptr.To[int32](-5) },
		"skip": func(r *machinaio.MachineDrainRule) {
			r.Spec.Drain = machinaio.MachineDrainRuleDrain{Behavior: machinaio.DrainBehaviorSkip}
		},
		"wait": func(r *machinaio.MachineDrainRule) {
			r.Spec.Drain = machinaio.MachineDrainRuleDrain{Behavior: machinaio.DrainBehaviorWaitCompleted}
		},
		"all pods": func(r *machinaio.MachineDrainRule) { r.Spec.Pods = nil },
		"namespace": func(r *machinaio.MachineDrainRule) {
			r.Spec.Pods[0].NamespaceSelector = &machinaio.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
		},
		"machine expr": func(r *machinaio.MachineDrainRule) {
			r.Spec.Machines = []machinaio.MachineDrainRuleMachineSelector{{Selector: machinaio.LabelSelector{MatchExpressions: []machinaio.LabelSelectorRequirement{
				{Key: "pool", Operator: metav1.LabelSelectorOpIn, Values: []string{"db"}},
				{Key: "spot", Operator: metav1.LabelSelectorOpDoesNotExist},
			}}}}
		},
	} {
		require.NoError(t, c.Create(ctx, drainRule("ok-"+ptrName(name), mutate)), name)
	}

	for name, tc := range map[string]struct {
		mutate func(*machinaio.MachineDrainRule)
		want   string
	}{
		"unknown behavior": {func(r *machinaio.MachineDrainRule) { r.Spec.Drain.Behavior = "Evict" }, "spec.drain.behavior"},
		"order with skip": {func(r *machinaio.MachineDrainRule) { r.Spec.Drain.Behavior = machinaio.DrainBehaviorSkip },
			"order can only be set when behavior is Drain"},
		"order with wait": {func(r *machinaio.MachineDrainRule) { r.Spec.Drain.Behavior = machinaio.DrainBehaviorWaitCompleted },
			"order can only be set when behavior is Drain"},
		"empty pod selector": {func(r *machinaio.MachineDrainRule) { r.Spec.Pods = []machinaio.MachineDrainRulePodSelector{{}} }, "spec.pods[0]"},
		"In without values": {func(r *machinaio.MachineDrainRule) {
			r.Spec.Pods[0].Selector = &machinaio.LabelSelector{MatchExpressions: []machinaio.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn}}}
		}, "operator In or NotIn needs values"},
		"Exists with values": {func(r *machinaio.MachineDrainRule) {
			r.Spec.Machines = []machinaio.MachineDrainRuleMachineSelector{{Selector: machinaio.LabelSelector{MatchExpressions: []machinaio.LabelSelectorRequirement{
				{Key: "pool", Operator: metav1.LabelSelectorOpExists, Values: []string{"x"}}}}}}
		}, "Exists or DoesNotExist takes none"},
		"unknown operator": {func(r *machinaio.MachineDrainRule) {
			r.Spec.Pods[0].NamespaceSelector = &machinaio.LabelSelector{MatchExpressions: []machinaio.LabelSelectorRequirement{{Key: "team", Operator: "Like", Values: []string{"a"}}}}
		}, "Unsupported value: \"Like\""},
	} {
		err := c.Create(ctx, drainRule("bad-"+ptrName(name), tc.mutate))
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), tc.want, name)
	}
}

func ptrName(s string) string {
	out := []byte(s)
	for i, b := range out {
		if b == ' ' {
			out[i] = '-'
		}
	}
	return string(out)
}
