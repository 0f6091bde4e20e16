package inplace

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// ReasonUpdateCancelled is machina's InPlaceUpdate reason (status False)
// for a node whose candidate-for-update and selected-for-update labels
// were removed before its update finished: the rollout that chose it ended
// (completed elsewhere, rolled back, switched strategy). It takes the go
// signal ReadyForUpdate back from an agent that has not acted on it yet.
const ReasonUpdateCancelled = "UpdateCancelled"

// labelTrue is the value of the candidate-for-update and
// selected-for-update labels.
const labelTrue = "true"

// IsCandidate tells whether the node is labelled candidate-for-update.
func IsCandidate(n *corev1.Node) bool {
	return n.Labels[v1alpha1.LabelKeyNodeCandidateForUpdate] == labelTrue
}

// IsSelected tells whether the node is labelled selected-for-update.
func IsSelected(n *corev1.Node) bool {
	return n.Labels[v1alpha1.LabelKeyNodeSelectedForUpdate] == labelTrue
}

// Result is the node's update-result label: "successful", "failed" or "".
func Result(n *corev1.Node) string {
	return n.Labels[v1alpha1.LabelKeyNodeUpdateResult]
}

// Condition returns the node's InPlaceUpdate condition, nil when it has none.
func Condition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == v1alpha1.NodeInPlaceUpdate {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// Reason is the reason of the node's InPlaceUpdate condition, "" when it
// has none.
func Reason(n *corev1.Node) string {
	if c := Condition(n); c != nil {
		return c.Reason
	}
	return ""
}

// inFlight are the reasons of an update that has started and not ended.
func inFlight(reason string) bool {
	switch reason {
	case v1alpha1.CandidateForUpdate, v1alpha1.SelectedForUpdate, v1alpha1.DrainSuccessful, v1alpha1.ReadyForUpdate:
		return true
	}
	return false
}

// NextReason is the reason the node's InPlaceUpdate condition must have
// given its labels, or "" to leave the condition as it is. It covers every
// step but the drain: SelectedForUpdate becomes ReadyForUpdate when the
// caller has drained the node (see Drained).
//
//   - A candidate without the condition, or whose last update ended
//     (UpdateSuccessful) and carries no update-result any more, starts
//     over: CandidateForUpdate.
//   - A candidate that is also selected, not yet past the selection:
//     SelectedForUpdate.
//   - A node told to update (ReadyForUpdate) or whose update failed, with
//     update-result=successful: UpdateSuccessful; with
//     update-result=failed: UpdateFailed.
//   - A node without either label whose update had not finished:
//     ReasonUpdateCancelled.
//
// An update-result on a node that was not told to update yet is stale (a
// leftover of an earlier rollout) and is ignored: an agent acts only on
// ReadyForUpdate.
func NextReason(n *corev1.Node) string {
	reason := Reason(n)
	candidate, selected, result := IsCandidate(n), IsSelected(n), Result(n)

	switch {
	case reason == v1alpha1.ReadyForUpdate || reason == v1alpha1.UpdateFailed:
		switch result {
		case v1alpha1.LabelValueNodeUpdateSuccessful:
			return v1alpha1.UpdateSuccessful
		case v1alpha1.LabelValueNodeUpdateFailed:
			if reason != v1alpha1.UpdateFailed {
				return v1alpha1.UpdateFailed
			}
			return ""
		}
	case reason == v1alpha1.UpdateSuccessful && result == "" && candidate:
		reason = ""
	}

	if !candidate && !selected {
		if inFlight(reason) {
			return ReasonUpdateCancelled
		}
		return ""
	}
	if !candidate {
		// Selected alone: a user labelled a node that no rollout made a
		// candidate; nothing is done until one does.
		return ""
	}
	switch reason {
	case "", ReasonUpdateCancelled:
		if selected {
			return v1alpha1.SelectedForUpdate
		}
		return v1alpha1.CandidateForUpdate
	case v1alpha1.CandidateForUpdate:
		if selected {
			return v1alpha1.SelectedForUpdate
		}
	}
	return ""
}

// Messages of the InPlaceUpdate condition, one per reason.
var messages = map[string]string{
	v1alpha1.CandidateForUpdate: "Node is a candidate for an in-place update",
	v1alpha1.SelectedForUpdate:  "Node is selected for an in-place update; draining it",
	v1alpha1.DrainSuccessful:    "Node drained successfully",
	v1alpha1.ReadyForUpdate:     "Node drained successfully and ready for the in-place update",
	v1alpha1.UpdateSuccessful:   "Node updated in place successfully",
	v1alpha1.UpdateFailed:       "In-place update of the node failed",
	ReasonUpdateCancelled:       "The in-place update of the node was cancelled: it is no longer a candidate",
}

// SetCondition sets the node's InPlaceUpdate condition to reason, with
// message (the reason's standard message when empty). The status is True
// for every reason but ReasonUpdateCancelled. It reports whether anything
// changed; the transition time moves only when the reason does, so that
// the drain timeout can count from the SelectedForUpdate transition.
func SetCondition(n *corev1.Node, reason, message string, now time.Time) bool {
	if message == "" {
		message = messages[reason]
	}
	status := corev1.ConditionTrue
	if reason == ReasonUpdateCancelled {
		status = corev1.ConditionFalse
	}
	c := Condition(n)
	if c == nil {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: v1alpha1.NodeInPlaceUpdate})
		c = &n.Status.Conditions[len(n.Status.Conditions)-1]
	}
	if c.Status == status && c.Reason == reason && c.Message == message {
		return false
	}
	t := metav1.NewTime(now)
	if c.Reason != reason || c.Status != status {
		c.LastTransitionTime = t
	}
	c.Status, c.Reason, c.Message, c.LastHeartbeatTime = status, reason, message, t
	return true
}

// FailedMessage is the UpdateFailed message of a node whose agent reported
// failed with why (its update-failed-reason): the node stays cordoned, and
// the condition says why and until when.
func FailedMessage(why string) string {
	if why == "" {
		why = "the node's agent gave no reason"
	}
	return fmt.Sprintf("In-place update of the node failed: %s. The node stays cordoned until its machine is replaced "+
		"(orchestrationType Auto: at once) or, with Manual, its agent reports success or the machine is deleted", why)
}

// TimedOutMessage is the ReadyForUpdate message of a node whose agent did
// not answer within timeout: the go signal stays (a late answer counts),
// and the condition says why the node is still cordoned.
func TimedOutMessage(timeout time.Duration) string {
	return fmt.Sprintf("%s; its agent did not answer within the in-place timeout of %s, so the update failed. The node stays cordoned "+
		"until its machine is replaced (orchestrationType Auto: at once) or, with Manual, its agent answers or the machine is deleted",
		messages[v1alpha1.ReadyForUpdate], timeout)
}
