package virtualnode

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// eventuallyNode waits until a Node satisfies cond and returns it.
func eventuallyNode(t *testing.T, name, what string, cond func(*corev1.Node) bool) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	require.Eventually(t, func() bool {
		node = getNode(t, name)
		return cond(node)
	}, 30*time.Second, 20*time.Millisecond, "node %s: %s", name, what)
	return node
}

// TestMachineConfigSimulation checks that the driver plays the node agent
// of the MachineConfig handshake for the Nodes of a class with
// "machineConfig": Working and a drain request, nothing more until the
// drain is acknowledged; then after the class's duration the uncordon
// request; once acknowledged, currentConfig and Done. At failure rate 1 the
// update ends Degraded with a reason; a class without the key gets no
// simulation. The test plays the core's drain controller.
func TestMachineConfigSimulation(t *testing.T) {
	for _, watch := range []bool{true, false} {
		t.Run(fmt.Sprintf("watch=%v", watch), func(t *testing.T) {
			d := startDriver(t, Options{HeartbeatInterval: 200 * time.Millisecond, WatchNodes: watch})
			ctx := context.Background()
			prefix := fmt.Sprintf("mc-%v-", watch)
			create := func(name, spec string) {
				t.Helper()
				t.Cleanup(func() { removeNode(t, name); removeLease(t, name) })
				_, err := d.CreateMachine(ctx, createReq(name, "mcsim", spec))
				require.NoError(t, err)
			}
			ok, failing, off := prefix+"ok", prefix+"failing", prefix+"off"
			create(ok, `{"machineConfig":{"duration":"500ms"}}`)
			create(failing, `{"machineConfig":{"failureRate":1}}`)
			create(off, `{}`)
			assert.Equal(t, "500ms", getNode(t, ok).Annotations[AnnotationMachineConfigDuration])
			assert.NotContains(t, getNode(t, off).Annotations, AnnotationMachineConfigDuration)

			for _, name := range []string{ok, failing, off} {
				mergePatchNode(t, name, `{"metadata":{"annotations":{"`+mcDesiredConfig+`":"rendered-w-2","`+mcCurrentConfig+`":"rendered-w-1","`+mcState+`":"Done"}}}`)
			}
			for _, name := range []string{ok, failing} {
				eventuallyNode(t, name, "asks for the drain", func(n *corev1.Node) bool {
					return n.Annotations[mcState] == mcStateWorking && n.Annotations[mcDesiredDrain] == "drain-rendered-w-2"
				})
			}
			acked := time.Now()
			for _, name := range []string{ok, failing} {
				mergePatchNode(t, name, `{"metadata":{"annotations":{"`+mcLastAppliedDrain+`":"drain-rendered-w-2"}}}`)
			}
			eventuallyNode(t, ok, "asks for the uncordon", func(n *corev1.Node) bool {
				return n.Annotations[mcDesiredDrain] == "uncordon-rendered-w-2"
			})
			assert.GreaterOrEqual(t, time.Since(acked), 500*time.Millisecond, "the writing takes the class's duration")
			assert.Equal(t, "rendered-w-1", getNode(t, ok).Annotations[mcCurrentConfig], "not current before the uncordon")
			mergePatchNode(t, ok, `{"metadata":{"annotations":{"`+mcLastAppliedDrain+`":"uncordon-rendered-w-2"}}}`)
			node := eventuallyNode(t, ok, "done", func(n *corev1.Node) bool {
				return n.Annotations[mcState] == mcStateDone && n.Annotations[mcCurrentConfig] == "rendered-w-2"
			})
			assert.NotContains(t, node.Annotations, mcReason)

			node = eventuallyNode(t, failing, "degraded", func(n *corev1.Node) bool { return n.Annotations[mcState] == mcStateDegraded })
			assert.Equal(t, "simulated MachineConfig update failure (virtualnode failure rate 1)", node.Annotations[mcReason])
			assert.Equal(t, "rendered-w-1", node.Annotations[mcCurrentConfig])

			node = getNode(t, off)
			assert.Equal(t, "Done", node.Annotations[mcState], "the off Node saw the same changes and beats")
			assert.NotContains(t, node.Annotations, mcDesiredDrain)
		})
	}
}
