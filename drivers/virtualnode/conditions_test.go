package virtualnode

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func statusOf(conds []corev1.NodeCondition) map[corev1.NodeConditionType]corev1.ConditionStatus {
	out := map[corev1.NodeConditionType]corev1.ConditionStatus{}
	for _, c := range conds {
		out[c.Type] = c.Status
	}
	return out
}

func TestDesiredConditions(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	node := func(simulate string, readyAfter time.Time) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
		if simulate != "" {
			n.Annotations[AnnotationSimulate] = simulate
		}
		if !readyAfter.IsZero() {
			n.Annotations[AnnotationReadyAfter] = readyAfter.Format(time.RFC3339Nano)
		}
		return n
	}
	healthy := map[corev1.NodeConditionType]corev1.ConditionStatus{
		corev1.NodeReady: corev1.ConditionTrue, corev1.NodeMemoryPressure: corev1.ConditionFalse,
		corev1.NodeDiskPressure: corev1.ConditionFalse, corev1.NodePIDPressure: corev1.ConditionFalse,
		corev1.NodeNetworkUnavailable: corev1.ConditionFalse,
	}
	with := func(changes map[corev1.NodeConditionType]corev1.ConditionStatus) map[corev1.NodeConditionType]corev1.ConditionStatus {
		out := map[corev1.NodeConditionType]corev1.ConditionStatus{}
		for k, v := range healthy {
			out[k] = v
		}
		for k, v := range changes {
			out[k] = v
		}
		return out
	}

	assert.Equal(t, healthy, statusOf(desiredConditions(node("", time.Time{}), now)))
	assert.Equal(t, healthy, statusOf(desiredConditions(node("", now), now)), "the boot ends at ready-after")
	booting := desiredConditions(node("", now.Add(time.Nanosecond)), now)
	assert.Equal(t, with(map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeReady: corev1.ConditionFalse}), statusOf(booting))
	assert.Equal(t, reasonBooting, booting[0].Reason)
	assert.Equal(t, with(map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeReady: corev1.ConditionFalse}),
		statusOf(desiredConditions(node("NotReady", time.Time{}), now)))
	assert.Equal(t, with(map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeReady: corev1.ConditionUnknown}),
		statusOf(desiredConditions(node("NotReady,ReadyUnknown", time.Time{}), now)), "ReadyUnknown wins")
	assert.Equal(t, with(map[corev1.NodeConditionType]corev1.ConditionStatus{
		corev1.NodeMemoryPressure: corev1.ConditionTrue, corev1.NodeNetworkUnavailable: corev1.ConditionTrue,
		"KernelDeadlock": corev1.ConditionTrue,
	}), statusOf(desiredConditions(node(" MemoryPressure,,NetworkUnavailable,KernelDeadlock ", time.Time{}), now)))

	// A simulated condition of another type ends False; one that is not
	// the driver's is left alone.
	ended := node("", time.Time{})
	ended.Status.Conditions = []corev1.NodeCondition{
		{Type: "KernelDeadlock", Status: corev1.ConditionTrue, Reason: reasonSimulated},
		{Type: "FrequentKubeletRestart", Status: corev1.ConditionTrue, Reason: "FromNPD"},
	}
	assert.Equal(t, with(map[corev1.NodeConditionType]corev1.ConditionStatus{"KernelDeadlock": corev1.ConditionFalse}),
		statusOf(desiredConditions(ended, now)))
}

func TestNextConditionsKeepsTransitionTimes(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := then.Add(time.Hour)
	n := &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: then, LastHeartbeatTime: then},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue, LastTransitionTime: then, LastHeartbeatTime: then},
	}}}
	for _, c := range nextConditions(n, now) {
		assert.Equal(t, now, c.LastHeartbeatTime.Time, c.Type)
		switch c.Type {
		case corev1.NodeReady:
			assert.Equal(t, then, c.LastTransitionTime, "Ready stayed True")
		default:
			assert.Equal(t, now, c.LastTransitionTime.Time, "%s changed or is new", c.Type)
		}
	}
}

func TestClassLabelValue(t *testing.T) {
	assert.Equal(t, "small", classLabelValue("small"))
	long := classLabelValue("a-very-long-machine-class-name-that-does-not-fit-into-a-label-value.example.com")
	assert.Len(t, long, 63)
	assert.NotEqual(t, long, classLabelValue("another-very-long-machine-class-name-that-does-not-fit-into-a-label.example.com"))
}
