package machine

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

func template(labels, annotations map[string]string, taints ...corev1.Taint) v1alpha1.NodeTemplateSpec {
	return v1alpha1.NodeTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
		Spec:       corev1.NodeSpec{Taints: taints},
	}
}

func TestApplyNodeTemplateThreeWay(t *testing.T) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "n1",
			Labels:      map[string]string{"kubernetes.io/hostname": "n1", "team": "old"},
			Annotations: map[string]string{"foreign": "keep"},
		},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}}},
	}

	// First application: adds, removes nothing it did not apply.
	first := template(map[string]string{"team": "a", "pool": "p1"}, map[string]string{"note": "x"},
		corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule})
	got, err := applyNodeTemplate(node, first)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"kubernetes.io/hostname": "n1", "team": "a", "pool": "p1"}, got.Labels)
	assert.Equal(t, "keep", got.Annotations["foreign"])
	assert.Equal(t, "x", got.Annotations["note"])
	assert.ElementsMatch(t, []corev1.Taint{
		{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule},
		{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule},
	}, got.Spec.Taints)
	var record v1alpha1.NodeTemplateSpec
	require.NoError(t, json.Unmarshal([]byte(got.Annotations[v1alpha1.LastAppliedALTAnnotation]), &record))
	assert.Equal(t, first.Labels, record.Labels)
	assert.Equal(t, first.Spec.Taints, record.Spec.Taints)

	// Someone else adds a label and a taint; the template drops "pool",
	// "note" and the taint, and changes "team".
	got.Labels["other"] = "theirs"
	got.Spec.Taints = append(got.Spec.Taints, corev1.Taint{Key: "theirs", Effect: corev1.TaintEffectNoExecute})
	second := template(map[string]string{"team": "b"}, nil)
	got2, err := applyNodeTemplate(got, second)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"kubernetes.io/hostname": "n1", "team": "b", "other": "theirs"}, got2.Labels)
	assert.NotContains(t, got2.Annotations, "note")
	assert.Equal(t, "keep", got2.Annotations["foreign"])
	assert.ElementsMatch(t, []corev1.Taint{
		{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule},
		{Key: "theirs", Effect: corev1.TaintEffectNoExecute},
	}, got2.Spec.Taints)

	// Applying the same template again changes nothing.
	got3, err := applyNodeTemplate(got2, second)
	require.NoError(t, err)
	assert.Equal(t, got2, got3)
}

func TestApplyEmptyNodeTemplateWritesNothing(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"a": "b"}}}
	got, err := applyNodeTemplate(node, template(nil, nil))
	require.NoError(t, err)
	assert.Equal(t, node, got)
}

// A record written by MCM (same shape) is understood: keys MCM applied and
// the template no longer has are removed.
func TestApplyNodeTemplateReadsMCMRecord(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   "n1",
		Labels: map[string]string{"from-mcm": "1", "kept": "1"},
		Annotations: map[string]string{
			v1alpha1.LastAppliedALTAnnotation: `{"metadata":{"creationTimestamp":null,"labels":{"from-mcm":"1","kept":"1"}},"spec":{}}`,
		},
	}}
	got, err := applyNodeTemplate(node, template(map[string]string{"kept": "1"}, nil))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"kept": "1"}, got.Labels)
}
