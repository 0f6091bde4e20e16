package virtualnode

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestSimulatedFailuresApplyAtOnceWhenWatching(t *testing.T) {
	// With an interval of an hour, only the informer can bring changes.
	d := startDriver(t, Options{HeartbeatInterval: time.Hour, WatchNodes: true})
	ctx := context.Background()
	t.Cleanup(func() { removeNode(t, "sim-1") })
	_, err := d.CreateMachine(ctx, createReq("sim-1", "small", "{}"))
	require.NoError(t, err)
	eventuallyCondition(t, "sim-1", corev1.NodeReady, corev1.ConditionTrue, "")

	// The core's labels and taints survive heartbeats.
	node := getNode(t, "sim-1")
	node.Labels["core-label"] = "kept"
	node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: "core-taint", Effect: corev1.TaintEffectNoExecute})
	_, err = testClient.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
	require.NoError(t, err)

	annotate(t, "sim-1", AnnotationSimulate, SimulateNotReady)
	eventuallyCondition(t, "sim-1", corev1.NodeReady, corev1.ConditionFalse, reasonSimulated)

	annotate(t, "sim-1", AnnotationSimulate, "ReadyUnknown, DiskPressure,ReadonlyFilesystem")
	eventuallyCondition(t, "sim-1", corev1.NodeReady, corev1.ConditionUnknown, reasonSimulated)
	node = eventuallyCondition(t, "sim-1", corev1.NodeDiskPressure, corev1.ConditionTrue, reasonSimulated)
	assert.Equal(t, corev1.ConditionTrue, condition(node, "ReadonlyFilesystem").Status)
	assert.Equal(t, corev1.ConditionFalse, condition(node, corev1.NodeMemoryPressure).Status)

	annotate(t, "sim-1", AnnotationSimulate, "")
	node = eventuallyCondition(t, "sim-1", corev1.NodeReady, corev1.ConditionTrue, "KubeletReady")
	assert.Equal(t, corev1.ConditionFalse, condition(node, corev1.NodeDiskPressure).Status)
	assert.Equal(t, corev1.ConditionFalse, condition(node, "ReadonlyFilesystem").Status)
	assert.Equal(t, reasonSimulationEnded, condition(node, "ReadonlyFilesystem").Reason)

	assert.Equal(t, "kept", node.Labels["core-label"])
	assert.Contains(t, node.Spec.Taints, corev1.Taint{Key: "core-taint", Effect: corev1.TaintEffectNoExecute})
}

func TestHeartbeatIntervalRefreshesNodesWithoutWatching(t *testing.T) {
	d := startDriver(t, Options{HeartbeatInterval: 300 * time.Millisecond})
	ctx := context.Background()
	t.Cleanup(func() { removeNode(t, "beat-1") })
	_, err := d.CreateMachine(ctx, createReq("beat-1", "small", "{}"))
	require.NoError(t, err)
	node := eventuallyCondition(t, "beat-1", corev1.NodeReady, corev1.ConditionTrue, "")
	first := condition(node, corev1.NodeReady)

	// Heartbeat times advance (with second precision); the transition
	// time stays while the status does not change.
	require.Eventually(t, func() bool {
		c := condition(getNode(t, "beat-1"), corev1.NodeReady)
		return c.LastHeartbeatTime.After(first.LastHeartbeatTime.Time)
	}, 30*time.Second, 100*time.Millisecond)
	assert.Equal(t, first.LastTransitionTime, condition(getNode(t, "beat-1"), corev1.NodeReady).LastTransitionTime)

	annotate(t, "beat-1", AnnotationSimulate, SimulateNotReady)
	eventuallyCondition(t, "beat-1", corev1.NodeReady, corev1.ConditionFalse, reasonSimulated)
	annotate(t, "beat-1", AnnotationSimulate, "")
	eventuallyCondition(t, "beat-1", corev1.NodeReady, corev1.ConditionTrue, "KubeletReady")
}

func TestHeartbeatLeavesNodesBeingDeletedAlone(t *testing.T) {
	d := startDriver(t, Options{HeartbeatInterval: 200 * time.Millisecond})
	ctx := context.Background()
	t.Cleanup(func() { removeNode(t, "gone-1") })
	_, err := d.CreateMachine(ctx, createReq("gone-1", "small", "{}"))
	require.NoError(t, err)
	eventuallyCondition(t, "gone-1", corev1.NodeReady, corev1.ConditionTrue, "")

	// A patch, not an update: the heartbeat writes the Node's status meanwhile.
	_, err = testClient.CoreV1().Nodes().Patch(ctx, "gone-1", types.MergePatchType,
		[]byte(`{"metadata":{"finalizers":["example.com/hold"]}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	_, err = d.DeleteMachine(ctx, deleteReq(machine("gone-1")))
	require.NoError(t, err)
	// Wait for one more heartbeat time on another Node to be sure the loop
	// ran, then check this one was left alone.
	deleted := condition(getNode(t, "gone-1"), corev1.NodeReady).LastHeartbeatTime
	t.Cleanup(func() { removeNode(t, "gone-2") })
	_, err = d.CreateMachine(ctx, createReq("gone-2", "small", "{}"))
	require.NoError(t, err)
	node2 := eventuallyCondition(t, "gone-2", corev1.NodeReady, corev1.ConditionTrue, "")
	since := condition(node2, corev1.NodeReady).LastHeartbeatTime
	require.Eventually(t, func() bool {
		return condition(getNode(t, "gone-2"), corev1.NodeReady).LastHeartbeatTime.Time.Sub(since.Time) >= 2*time.Second
	}, 30*time.Second, 100*time.Millisecond)
	assert.Equal(t, deleted, condition(getNode(t, "gone-1"), corev1.NodeReady).LastHeartbeatTime)
}
