package overshoot

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// conditionFields is what setFrozen needs of a MachineSet or
// MachineDeployment condition, whose Go types differ.
type conditionFields struct {
	frozen          bool // the condition is of type Frozen
	status          v1alpha1.ConditionStatus
	reason, message string
	lastTransition  *metav1.Time
	lastUpdate      *metav1.Time // nil for a type without lastUpdateTime
}

func setConditionFields(c *v1alpha1.MachineSetCondition) conditionFields {
	return conditionFields{
		frozen: c.Type == v1alpha1.MachineSetFrozen,
		status: c.Status, reason: c.Reason, message: c.Message,
		lastTransition: &c.LastTransitionTime,
	}
}

func deploymentConditionFields(c *v1alpha1.MachineDeploymentCondition) conditionFields {
	return conditionFields{
		frozen: c.Type == v1alpha1.MachineDeploymentFrozen,
		status: c.Status, reason: c.Reason, message: c.Message,
		lastTransition: &c.LastTransitionTime, lastUpdate: &c.LastUpdateTime,
	}
}

// setFrozen returns conds with the Frozen condition replaced by c, or
// removed when c is nil, and whether that changes anything; conds itself is
// left alone. c is stamped with the current time, except that its
// lastTransitionTime stays the old one's while the status does not change.
func setFrozen[C any](conds []C, c *C, fields func(*C) conditionFields) ([]C, bool) {
	var kept []C
	var old *C
	for i := range conds {
		if fields(&conds[i]).frozen {
			old = &conds[i]
			continue
		}
		kept = append(kept, conds[i])
	}
	if c == nil {
		return kept, old != nil
	}
	now := metav1.Now()
	next := fields(c)
	*next.lastTransition = now
	if next.lastUpdate != nil {
		*next.lastUpdate = now
	}
	if old != nil {
		prev := fields(old)
		if prev.status == next.status && prev.reason == next.reason && prev.message == next.message {
			return conds, false
		}
		if prev.status == next.status {
			*next.lastTransition = *prev.lastTransition
		}
	}
	return append(kept, *c), true
}
