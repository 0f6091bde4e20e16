package virtualnode

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Simulated failures, values of AnnotationSimulate.
const (
	SimulateNotReady     = "NotReady"
	SimulateReadyUnknown = "ReadyUnknown"
)

// Condition reasons the heartbeat writes.
const (
	reasonSimulated       = "Simulated"
	reasonSimulationEnded = "SimulationEnded"
	reasonBooting         = "Booting"
)

// pressureConditions are the conditions a healthy Node reports False, with
// the reason a kubelet gives.
var pressureConditions = []struct {
	typ    corev1.NodeConditionType
	reason string
	msg    string
}{
	{corev1.NodeMemoryPressure, "KubeletHasSufficientMemory", "virtual kubelet has sufficient memory available"},
	{corev1.NodeDiskPressure, "KubeletHasNoDiskPressure", "virtual kubelet has no disk pressure"},
	{corev1.NodePIDPressure, "KubeletHasSufficientPID", "virtual kubelet has sufficient PID available"},
	{corev1.NodeNetworkUnavailable, "VirtualNetworkReady", "the virtual network is up"},
}

// simulated returns the failures listed in a Node's AnnotationSimulate.
func simulated(node *corev1.Node) []string {
	var out []string
	for v := range strings.SplitSeq(node.Annotations[AnnotationSimulate], ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// readyAfter returns when the Node is done booting; the zero time when it
// carries no (valid) AnnotationReadyAfter.
func readyAfter(node *corev1.Node) time.Time {
	t, err := time.Parse(time.RFC3339Nano, node.Annotations[AnnotationReadyAfter])
	if err != nil {
		return time.Time{}
	}
	return t
}

// desiredConditions returns the conditions the Node should report at now,
// without timestamps.
func desiredConditions(node *corev1.Node, now time.Time) []corev1.NodeCondition {
	sim := simulated(node)
	var out []corev1.NodeCondition
	add := func(typ corev1.NodeConditionType, st corev1.ConditionStatus, reason, msg string) {
		out = append(out, corev1.NodeCondition{Type: typ, Status: st, Reason: reason, Message: msg})
	}

	switch {
	case slices.Contains(sim, SimulateReadyUnknown):
		add(corev1.NodeReady, corev1.ConditionUnknown, reasonSimulated, "simulated: the kubelet stopped posting node status")
	case slices.Contains(sim, SimulateNotReady):
		add(corev1.NodeReady, corev1.ConditionFalse, reasonSimulated, "simulated: the node is not ready")
	case now.Before(readyAfter(node)):
		add(corev1.NodeReady, corev1.ConditionFalse, reasonBooting, "the virtual node is booting")
	default:
		add(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "virtual kubelet is posting ready status")
	}

	known := []string{SimulateNotReady, SimulateReadyUnknown, string(corev1.NodeReady)}
	for _, p := range pressureConditions {
		known = append(known, string(p.typ))
		if slices.Contains(sim, string(p.typ)) {
			add(p.typ, corev1.ConditionTrue, reasonSimulated, "simulated: "+string(p.typ))
		} else {
			add(p.typ, corev1.ConditionFalse, p.reason, p.msg)
		}
	}
	// Any other simulated value is a condition of that type, set True, e.g.
	// the ReadonlyFilesystem of node-problem-detector.
	for _, v := range sim {
		if !slices.Contains(known, v) {
			add(corev1.NodeConditionType(v), corev1.ConditionTrue, reasonSimulated, "simulated: "+v)
			known = append(known, v)
		}
	}
	// Such a condition ends with its simulation.
	for _, c := range node.Status.Conditions {
		if c.Reason == reasonSimulated && !slices.Contains(known, string(c.Type)) {
			add(c.Type, corev1.ConditionFalse, reasonSimulationEnded, "the simulation of "+string(c.Type)+" ended")
		}
	}
	return out
}

// nextConditions returns the desired conditions of node at now with their
// timestamps: the heartbeat time is now, the transition time stays what it
// was unless the status changes.
func nextConditions(node *corev1.Node, now time.Time) []corev1.NodeCondition {
	stamp := metav1.NewTime(now)
	out := desiredConditions(node, now)
	for i := range out {
		out[i].LastHeartbeatTime = stamp
		out[i].LastTransitionTime = stamp
		for _, old := range node.Status.Conditions {
			if old.Type == out[i].Type && old.Status == out[i].Status {
				out[i].LastTransitionTime = old.LastTransitionTime
			}
		}
	}
	return out
}
