package preservation

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// Condition returns the Preserved condition of conds, nil if none.
func Condition(conds []corev1.NodeCondition) *corev1.NodeCondition {
	for i := range conds {
		if conds[i].Type == v1alpha1.NodePreserved {
			return &conds[i]
		}
	}
	return nil
}

// SetCondition sets the Preserved condition in conds and reports whether
// anything changed; the transition time moves with the status.
func SetCondition(conds *[]corev1.NodeCondition, status corev1.ConditionStatus, reason, message string, now time.Time) bool {
	c := Condition(*conds)
	if c == nil {
		*conds = append(*conds, corev1.NodeCondition{Type: v1alpha1.NodePreserved})
		c = &(*conds)[len(*conds)-1]
	}
	if c.Status == status && c.Reason == reason && c.Message == message {
		return false
	}
	t := metav1.NewTime(now)
	if c.Status != status {
		c.LastTransitionTime = t
	}
	c.Status, c.Reason, c.Message, c.LastHeartbeatTime = status, reason, message, t
	return true
}
