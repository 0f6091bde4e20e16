package drain

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// conditionReadonlyFilesystem is the node-problem-detector condition for a
// root filesystem remounted read-only.
const conditionReadonlyFilesystem corev1.NodeConditionType = "ReadonlyFilesystem"

// Unreachable tells whether node has been NotReady, or has reported a
// read-only filesystem, for longer than threshold at now, and says which
// and since when. A Node with no Ready condition at all counts as NotReady
// since its creation.
func Unreachable(node *corev1.Node, now time.Time, threshold time.Duration) (reason string, unreachable bool) {
	ready := findCondition(node, corev1.NodeReady)
	switch {
	case ready == nil:
		since := node.CreationTimestamp.Time
		if now.Sub(since) > threshold {
			return fmt.Sprintf("node %s has reported no Ready condition since %s", node.Name, since.UTC().Format(time.RFC3339)), true
		}
	case ready.Status != corev1.ConditionTrue:
		since := ready.LastTransitionTime.Time
		if now.Sub(since) > threshold {
			return fmt.Sprintf("node %s has been Ready=%s since %s", node.Name, ready.Status, since.UTC().Format(time.RFC3339)), true
		}
	}
	if ro := findCondition(node, conditionReadonlyFilesystem); ro != nil && ro.Status == corev1.ConditionTrue {
		since := ro.LastTransitionTime.Time
		if now.Sub(since) > threshold {
			return fmt.Sprintf("node %s has had a read-only filesystem since %s", node.Name, since.UTC().Format(time.RFC3339)), true
		}
	}
	return "", false
}

func findCondition(node *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == t {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}
