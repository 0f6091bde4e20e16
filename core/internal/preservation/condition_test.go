package preservation

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// SetCondition adds the condition once, reports a change only when there
// is one, and moves the transition time only with the status.
func TestSetCondition(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	conds := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	assert.Nil(t, Condition(conds))

	assert.True(t, SetCondition(&conds, corev1.ConditionTrue, "r", "m", t0))
	require.Len(t, conds, 2)
	c := Condition(conds)
	require.NotNil(t, c)
	assert.Equal(t, corev1.NodeCondition{Type: v1alpha1.NodePreserved, Status: corev1.ConditionTrue, Reason: "r", Message: "m",
		LastTransitionTime: c.LastTransitionTime, LastHeartbeatTime: c.LastHeartbeatTime}, *c)
	assert.True(t, c.LastTransitionTime.Time.Equal(t0))

	assert.False(t, SetCondition(&conds, corev1.ConditionTrue, "r", "m", t0.Add(time.Minute)), "nothing changed")
	assert.True(t, Condition(conds).LastHeartbeatTime.Time.Equal(t0))

	assert.True(t, SetCondition(&conds, corev1.ConditionTrue, "r", "m2", t0.Add(time.Minute)))
	c = Condition(conds)
	assert.True(t, c.LastTransitionTime.Time.Equal(t0), "same status: the transition time stays")
	assert.True(t, c.LastHeartbeatTime.Time.Equal(t0.Add(time.Minute)))

	assert.True(t, SetCondition(&conds, corev1.ConditionFalse, "r", "m2", t0.Add(2*time.Minute)))
	assert.True(t, Condition(conds).LastTransitionTime.Time.Equal(t0.Add(2*time.Minute)))
	assert.Len(t, conds, 2, "set in place")
}
