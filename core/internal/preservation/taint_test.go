package preservation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// The preserved taint is added once, found whatever its effect, and
// removed without touching the others.
func TestTaint(t *testing.T) {
	other := corev1.Taint{Key: "other", Effect: corev1.TaintEffectNoExecute}
	n := &corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{other}}}
	assert.False(t, HasTaint(n))

	AddTaint(n)
	AddTaint(n)
	assert.Equal(t, []corev1.Taint{other, {Key: v1alpha1.PreservedTaintKey, Effect: corev1.TaintEffectNoSchedule}}, n.Spec.Taints)
	assert.True(t, HasTaint(n))

	RemoveTaint(n)
	assert.Equal(t, []corev1.Taint{other}, n.Spec.Taints)
	assert.False(t, HasTaint(n))

	// Another effect counts as the taint, and a NoSchedule one is added.
	n.Spec.Taints = []corev1.Taint{{Key: v1alpha1.PreservedTaintKey, Effect: corev1.TaintEffectPreferNoSchedule}}
	assert.True(t, HasTaint(n))
	AddTaint(n)
	assert.Len(t, n.Spec.Taints, 2)
	RemoveTaint(n)
	assert.Empty(t, n.Spec.Taints)

	// A list without it is left as it was.
	untouched := []corev1.Taint{other}
	n.Spec.Taints = untouched
	RemoveTaint(n)
	assert.Same(t, &untouched[0], &n.Spec.Taints[0])
}
