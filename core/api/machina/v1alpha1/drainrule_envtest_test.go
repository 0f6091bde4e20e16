package v1alpha1_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
	"github.com/machina-io/machina/core/drainorder"
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
	t.Run("examples apply unchanged", func(t *testing.T) { testDrainRuleExamples(t, c) })

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

// testDrainRuleExamples applies deploy/examples/machinedrainrules.yaml as
// a user would: every rule is accepted, reads back whole, and parses for
// the drain.
func testDrainRuleExamples(t *testing.T, c client.Client) {
	ctx := t.Context()
	crds, err := testenv.CRDDir()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(crds), "examples", "machinedrainrules.yaml"))
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "machina-system"}}))
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var rules []machinaio.MachineDrainRule
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		require.NoError(t, c.Create(ctx, u), u.GetName())
		back := &unstructured.Unstructured{}
		back.SetGroupVersionKind(u.GroupVersionKind())
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(u), back))
		assert.Equal(t, u.Object["spec"], back.Object["spec"], u.GetName())
		var r machinaio.MachineDrainRule
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(back.Object, &r))
		rules = append(rules, r)
	}
	require.Len(t, rules, 3)
	got, err := drainorder.ForMachine(rules, map[string]string{"pool": "gpu"})
	require.NoError(t, err)
	assert.Equal(t, []string{"databases-last", "keep-gpu-telemetry", "wait-backups"}, got.Names())
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
