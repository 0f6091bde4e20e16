package drain

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func nodeWith(created time.Time, conds ...corev1.NodeCondition) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(created)},
		Status:     corev1.NodeStatus{Conditions: conds},
	}
}

func cond(t corev1.NodeConditionType, s corev1.ConditionStatus, since time.Time) corev1.NodeCondition {
	return corev1.NodeCondition{Type: t, Status: s, LastTransitionTime: metav1.NewTime(since)}
}

func TestUnreachable(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	th := 5 * time.Minute
	cases := []struct {
		name string
		node *corev1.Node
		want bool
	}{
		{"ready", nodeWith(now.Add(-time.Hour), cond(corev1.NodeReady, corev1.ConditionTrue, now.Add(-time.Hour))), false},
		{"not ready briefly", nodeWith(now.Add(-time.Hour), cond(corev1.NodeReady, corev1.ConditionFalse, now.Add(-time.Minute))), false},
		{"not ready long", nodeWith(now.Add(-time.Hour), cond(corev1.NodeReady, corev1.ConditionFalse, now.Add(-6*time.Minute))), true},
		{"unknown long", nodeWith(now.Add(-time.Hour), cond(corev1.NodeReady, corev1.ConditionUnknown, now.Add(-6*time.Minute))), true},
		{"no ready condition, young", nodeWith(now.Add(-time.Minute)), false},
		{"no ready condition, old", nodeWith(now.Add(-time.Hour)), true},
		{"readonly fs long", nodeWith(now.Add(-time.Hour),
			cond(corev1.NodeReady, corev1.ConditionTrue, now.Add(-time.Hour)),
			cond("ReadonlyFilesystem", corev1.ConditionTrue, now.Add(-10*time.Minute))), true},
		{"readonly fs briefly", nodeWith(now.Add(-time.Hour),
			cond(corev1.NodeReady, corev1.ConditionTrue, now.Add(-time.Hour)),
			cond("ReadonlyFilesystem", corev1.ConditionTrue, now.Add(-time.Minute))), false},
	}
	for _, c := range cases {
		why, got := Unreachable(c.node, now, th)
		assert.Equal(t, c.want, got, c.name)
		if got {
			assert.Contains(t, why, "n1", c.name)
		} else {
			assert.Empty(t, why, c.name)
		}
	}
}

func TestResultSummary(t *testing.T) {
	assert.Equal(t, "node not found, nothing to drain", Result{}.Summary())
	assert.Equal(t, "node drained", Result{NodeFound: true}.Summary())
	r := Result{NodeFound: true, Remaining: 3, Terminating: 1, Evicted: 1, Blocked: []string{"ns/a"}}
	assert.Equal(t, "3 pods remaining, 1 terminating, 1 evicted in this pass, 1 blocked by a PodDisruptionBudget (ns/a)", r.Summary())
	assert.False(t, r.Drained())
}
