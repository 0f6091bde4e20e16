package machineset

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// Which Failed machines the set may preserve by itself.
func TestAutoPreserveCandidate(t *testing.T) {
	failedAt := t0.Add(-time.Minute)
	failed := func(m *v1alpha1.Machine) {
		m.Status.CurrentStatus.Phase = v1alpha1.MachineFailed
		m.Status.CurrentStatus.LastUpdateTime = metav1.NewTime(failedAt)
	}
	annotated := func(k, v string) machineOpt {
		return func(m *v1alpha1.Machine) {
			if m.Annotations == nil {
				m.Annotations = map[string]string{}
			}
			m.Annotations[k] = v
		}
	}
	preservedCond := func(at time.Time) machineOpt {
		return func(m *v1alpha1.Machine) {
			m.Status.Conditions = append(m.Status.Conditions, corev1.NodeCondition{Type: v1alpha1.NodePreserved,
				Status: corev1.ConditionFalse, Message: v1alpha1.PreservationStoppedMessage, LastTransitionTime: metav1.NewTime(at)})
		}
	}
	for _, tc := range []struct {
		name string
		m    *v1alpha1.Machine
		want bool
	}{
		{"failed, no value", machine("a", failed), true},
		{"running", machine("a"), false},
		{"failed, user's when-failed", machine("a", failed, annotated(v1alpha1.PreserveAnnotation, v1alpha1.PreserveValueWhenFailed)), false},
		{"failed, user's false", machine("a", failed, annotated(v1alpha1.PreserveAnnotation, v1alpha1.PreserveValueFalse)), false},
		{"failed, the node's value in force", machine("a", failed, annotated(v1alpha1.LastAppliedNodePreserveValueAnnotation, v1alpha1.PreserveValueFalse)), false},
		{"failed, preserved already", machine("a", failed, preservedUntil(t0.Add(time.Hour))), false},
		{"failed, this failure's preservation ended", machine("a", failed, preservedCond(failedAt.Add(time.Second))), false},
		{"failed again after an earlier preservation", machine("a", failed, preservedCond(failedAt.Add(-time.Hour))), true},
	} {
		assert.Equal(t, tc.want, autoPreserveCandidate(tc.m), tc.name)
	}
}
