package machinedeployment

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// Condition reasons, Kubernetes Deployment's with MachineSet in place of
// ReplicaSet, as MCM has them.
const (
	ReasonNewMachineSetCreated       = "NewMachineSetCreated"
	ReasonFailedMachineSetCreate     = "FailedMachineSetCreate"
	ReasonFoundNewMachineSet         = "FoundNewMachineSet"
	ReasonMachineSetUpdated          = "MachineSetUpdated"
	ReasonNewMachineSetAvailable     = "NewMachineSetAvailable"
	ReasonProgressDeadlineExceeded   = "ProgressDeadlineExceeded"
	ReasonDeploymentPaused           = "DeploymentPaused"
	ReasonDeploymentResumed          = "DeploymentResumed"
	ReasonMinimumReplicasAvailable   = "MinimumReplicasAvailable"
	ReasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
	// ReasonInvalidStrategy (Progressing, False) is machina's: the strategy
	// cannot be acted on (an unsupported type, or maxSurge or maxUnavailable
	// out of range); the message says which value and why.
	ReasonInvalidStrategy = "InvalidStrategy"
	// ReasonInvalidDuration (Progressing, False) is machina's: a duration of
	// the template cannot be used (not a Go duration, negative, or longer
	// than v1alpha1.MaxDuration); the message names the field.
	ReasonInvalidDuration = "InvalidDuration"
	// ReasonDisruptionHeld (event): machines an in-place update or an expiry
	// would take next wait for a pre-update hook (in place only) or run on
	// nodes that ask not to be disrupted (machina.io/do-not-disrupt); the
	// message names them and what holds.
	ReasonDisruptionHeld = "DisruptionHeld"
)

// newCondition returns a condition stamped with now.
func newCondition(t v1alpha1.MachineDeploymentConditionType, status v1alpha1.ConditionStatus, reason, message string, now time.Time) v1alpha1.MachineDeploymentCondition {
	ts := metav1.NewTime(now)
	return v1alpha1.MachineDeploymentCondition{
		Type: t, Status: status, Reason: reason, Message: message,
		LastUpdateTime: ts, LastTransitionTime: ts,
	}
}

// getCondition returns the condition of the given type, or nil.
func getCondition(st *v1alpha1.MachineDeploymentStatus, t v1alpha1.MachineDeploymentConditionType) *v1alpha1.MachineDeploymentCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// setCondition stores c. A condition with the same status and reason is left
// as it is (no write for nothing); a status change keeps the new transition
// time, an unchanged status keeps the old one.
func setCondition(st *v1alpha1.MachineDeploymentStatus, c v1alpha1.MachineDeploymentCondition) {
	cur := getCondition(st, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	removeCondition(st, c.Type)
	st.Conditions = append(st.Conditions, c)
}

// removeCondition drops the condition of the given type.
func removeCondition(st *v1alpha1.MachineDeploymentStatus, t v1alpha1.MachineDeploymentConditionType) {
	var out []v1alpha1.MachineDeploymentCondition
	for _, c := range st.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	st.Conditions = out
}

// fromMachineSetCondition turns a MachineSet condition into a deployment
// condition of the same type.
func fromMachineSetCondition(c v1alpha1.MachineSetCondition) v1alpha1.MachineDeploymentCondition {
	return v1alpha1.MachineDeploymentCondition{
		Type:               v1alpha1.MachineDeploymentConditionType(c.Type),
		Status:             c.Status,
		Reason:             c.Reason,
		Message:            c.Message,
		LastUpdateTime:     c.LastTransitionTime,
		LastTransitionTime: c.LastTransitionTime,
	}
}
