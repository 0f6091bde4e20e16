package virtualnode

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// setInPlaceReason gives a Node the core's InPlaceUpdate condition (a
// strategic merge patch of that one condition, as the core writes it).
func setInPlaceReason(t *testing.T, name, reason string) {
	t.Helper()
	now := metav1.Now()
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{{
		Type: conditionInPlaceUpdate, Status: corev1.ConditionTrue, Reason: reason, Message: "set by the test",
		LastHeartbeatTime: now, LastTransitionTime: now,
	}}}})
	require.NoError(t, err)
	_, err = testClient.CoreV1().Nodes().PatchStatus(context.Background(), name, patch)
	require.NoError(t, err)
}

func mergePatchNode(t *testing.T, name, patch string) {
	t.Helper()
	_, err := testClient.CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
}

// eventuallyResult waits until a Node carries update-result=result and
// returns it.
func eventuallyResult(t *testing.T, name, result string) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	require.Eventually(t, func() bool {
		n, err := testClient.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		node = n
		return n.Labels[labelUpdateResult] == result
	}, 30*time.Second, 20*time.Millisecond, "Node %s never had %s=%s", name, labelUpdateResult, result)
	return node
}

// TestInPlaceSimulation checks that the driver plays the node agent of the
// Nodes of a class with "inPlaceUpdate": after the class's duration from the
// go signal it reports success (current = desired, an old failure reason
// removed) or, at failure rate 1, failure; an already current target is
// reported without waiting; a class without the key gets no simulation. With
// and without the Node watch (without, the heartbeat is when it looks).
func TestInPlaceSimulation(t *testing.T) {
	for _, watch := range []bool{true, false} {
		t.Run(fmt.Sprintf("watch=%v", watch), func(t *testing.T) {
			d := startDriver(t, Options{HeartbeatInterval: 200 * time.Millisecond, WatchNodes: watch})
			ctx := context.Background()
			prefix := fmt.Sprintf("ip-%v-", watch)
			create := func(name, spec string) {
				t.Helper()
				t.Cleanup(func() { removeNode(t, name); removeLease(t, name) })
				_, err := d.CreateMachine(ctx, createReq(name, "inplace", spec))
				require.NoError(t, err)
			}

			const duration = 700 * time.Millisecond
			ok, failing, current, off := prefix+"ok", prefix+"failing", prefix+"current", prefix+"off"
			create(ok, `{"inPlaceUpdate":{"duration":"700ms"}}`)
			create(failing, `{"inPlaceUpdate":{"failureRate":1}}`)
			create(current, `{"inPlaceUpdate":{"duration":"1h"}}`)
			create(off, `{}`)
			assert.Equal(t, "700ms", getNode(t, ok).Annotations[AnnotationInPlaceUpdateDuration])
			assert.Equal(t, "0", getNode(t, ok).Annotations[AnnotationInPlaceFailureRate])
			assert.Equal(t, "1", getNode(t, failing).Annotations[AnnotationInPlaceFailureRate])
			assert.NotContains(t, getNode(t, off).Annotations, AnnotationInPlaceUpdateDuration, "off unless the class asks for it")

			for _, name := range []string{ok, failing, off} {
				mergePatchNode(t, name, `{"metadata":{"annotations":{"`+annotationDesired+`":"web-v2","`+annotationCurrent+`":"web-v1","`+
					annotationFailedReason+`":"an earlier failure"}}}`)
			}
			mergePatchNode(t, current, `{"metadata":{"annotations":{"`+annotationDesired+`":"web-v2","`+annotationCurrent+`":"web-v2"}}}`)
			// The drain is done, not yet the go signal: nothing happens
			// (checked below: the result takes the duration from the go
			// signal, not from here).
			setInPlaceReason(t, ok, "DrainSuccessful")
			signalled := time.Now()
			for _, name := range []string{ok, failing, current, off} {
				setInPlaceReason(t, name, reasonReadyForUpdate)
			}

			node := eventuallyResult(t, ok, updateResultSuccessful)
			assert.GreaterOrEqual(t, time.Since(signalled), duration, "the update takes the class's duration")
			assert.Equal(t, "web-v2", node.Annotations[annotationCurrent])
			assert.NotContains(t, node.Annotations, annotationFailedReason, "success removes the reason of an earlier failure")

			node = eventuallyResult(t, failing, updateResultFailed)
			assert.Equal(t, "simulated in-place update failure (virtualnode failure rate 1)", node.Annotations[annotationFailedReason])
			assert.Equal(t, "web-v1", node.Annotations[annotationCurrent], "a failed update leaves current alone")

			// Already current: reported at once, not after the hour.
			node = eventuallyResult(t, current, updateResultSuccessful)
			assert.Equal(t, "web-v2", node.Annotations[annotationCurrent])

			// The off Node saw the same go signal and the same beats.
			node = getNode(t, off)
			assert.NotContains(t, node.Labels, labelUpdateResult)
			assert.Equal(t, "web-v1", node.Annotations[annotationCurrent])

			// A new target after a failure, at rate 1, fails again: the
			// simulation reacts to the target, not only to the first one.
			mergePatchNode(t, failing, `{"metadata":{"labels":{"`+labelUpdateResult+`":null},"annotations":{"`+annotationDesired+`":"web-v3"}}}`)
			require.Eventually(t, func() bool {
				n := getNode(t, failing)
				return n.Labels[labelUpdateResult] == updateResultFailed && n.Annotations[annotationDesired] == "web-v3"
			}, 30*time.Second, 20*time.Millisecond)
		})
	}
}

func TestInPlaceProviderSpec(t *testing.T) {
	for spec, ok := range map[string]bool{
		`{"inPlaceUpdate":{}}`: true,
		`{"inPlaceUpdate":{"duration":"5s","failureRate":0.25}}`:   true,
		`{"inPlaceUpdate":{"duration":"-1s"}}`:                     false,
		`{"inPlaceUpdate":{"duration":"soon"}}`:                    false,
		`{"inPlaceUpdate":{"failureRate":1.5}}`:                    false,
		`{"inPlaceUpdate":{"failureRate":-0.1}}`:                   false,
		`{"inPlaceUpdate":{"duration":"5s","failureRate":"high"}}`: false,
	} {
		_, err := parseProviderSpec([]byte(spec))
		if ok {
			assert.NoError(t, err, spec)
		} else {
			requireCode(t, codes.InvalidArgument, err)
		}
	}
	spec, err := parseProviderSpec([]byte(`{}`))
	require.NoError(t, err)
	assert.Nil(t, spec.inPlace, "no simulation unless asked for")
}
