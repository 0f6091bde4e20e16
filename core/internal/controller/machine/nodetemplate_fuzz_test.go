package machine

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// FuzzApplyNodeTemplate applies a node template (labels, annotations, a
// taint from the fuzzer) to a Node whose last-applied annotation holds any
// text (it can be edited by hand): no panic and no error; everything the
// template wants is on the result; what someone else put on the Node and
// the template never had stays; and applying the same template again
// changes nothing (no write per reconcile).
func FuzzApplyNodeTemplate(f *testing.F) {
	f.Add(`{"metadata":{"labels":{"old":"1"}},"spec":{"taints":[{"key":"t","effect":"NoSchedule"}]}}`, "k", "v", "t", "v", "NoSchedule", "mine", "x")
	f.Add("not json", "", "", "", "", "", "", "")
	f.Add(`{"metadata":{"annotations":{"node.machine.sapcloud.io/last-applied-anno-labels-taints":"x"}}}`,
		"node.machine.sapcloud.io/last-applied-anno-labels-taints", "y", "k", "", "NoExecute", "k", "z")
	f.Add(`{"spec":{"taints":[{"key":"k","effect":"NoSchedule"},{"key":"k","effect":"NoSchedule"}]}}`, "a", "b", "k", "v", "NoSchedule", "k", "v")
	f.Fuzz(func(t *testing.T, lastApplied, labelKey, labelValue, taintKey, taintValue, taintEffect, otherKey, otherValue string) {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:        "n",
			Labels:      map[string]string{otherKey: otherValue},
			Annotations: map[string]string{v1alpha1.LastAppliedALTAnnotation: lastApplied},
		}}
		desired := v1alpha1.NodeTemplateSpec{ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{labelKey: labelValue},
			Annotations: map[string]string{labelKey: labelValue},
		}}
		if taintKey != "" {
			desired.Spec.Taints = []corev1.Taint{{Key: taintKey, Value: taintValue, Effect: corev1.TaintEffect(taintEffect)}}
		}
		orig := node.DeepCopy()
		out, err := applyNodeTemplate(node, desired)
		if err != nil {
			t.Fatalf("applyNodeTemplate: %v", err)
		}
		if !equality.Semantic.DeepEqual(orig, node) {
			t.Fatalf("the cached Node was modified")
		}
		if out.Labels[labelKey] != labelValue {
			t.Fatalf("label %q=%q not applied: %v", labelKey, labelValue, out.Labels)
		}
		if labelKey != v1alpha1.LastAppliedALTAnnotation && out.Annotations[labelKey] != labelValue {
			t.Fatalf("annotation %q=%q not applied", labelKey, labelValue)
		}
		for _, want := range desired.Spec.Taints {
			found := false
			for _, got := range out.Spec.Taints {
				found = found || (got.Key == want.Key && got.Effect == want.Effect && got.Value == want.Value)
			}
			if !found {
				t.Fatalf("taint %v not applied: %v", want, out.Spec.Taints)
			}
		}
		again, err := applyNodeTemplate(out, desired)
		if err != nil || !equality.Semantic.DeepEqual(again, out) {
			t.Fatalf("a second application changed the Node (%v):\n%+v\n%+v", err, out, again)
		}
	})
}
