package overshoot

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

func TestSetFrozenOnMachineSetConditions(t *testing.T) {
	long := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	available := v1alpha1.MachineSetCondition{Type: "Available", Status: v1alpha1.ConditionTrue, LastTransitionTime: long}
	frozen := v1alpha1.MachineSetCondition{Type: v1alpha1.MachineSetFrozen, Status: v1alpha1.ConditionTrue,
		Reason: v1alpha1.OverShootingReplicaCount, Message: "7 machines for 3 replicas", LastTransitionTime: long}
	conds := []v1alpha1.MachineSetCondition{available, frozen}

	t.Run("the same condition again changes nothing", func(t *testing.T) {
		same := frozen
		same.LastTransitionTime = metav1.Time{}
		got, changed := setFrozen(conds, &same, setConditionFields)
		assert.False(t, changed)
		assert.Equal(t, conds, got)
	})

	t.Run("a new message keeps the transition time of an unchanged status", func(t *testing.T) {
		next := frozen
		next.Message = "9 machines for 3 replicas"
		got, changed := setFrozen(conds, &next, setConditionFields)
		require.True(t, changed)
		require.Len(t, got, 2)
		assert.Equal(t, available, got[0])
		assert.Equal(t, "9 machines for 3 replicas", got[1].Message)
		assert.Equal(t, long, got[1].LastTransitionTime)
		assert.Equal(t, "7 machines for 3 replicas", conds[1].Message, "the input must be left alone")
	})

	t.Run("a new status is a transition", func(t *testing.T) {
		next := frozen
		next.Status = v1alpha1.ConditionFalse
		before := time.Now().Truncate(time.Second)
		got, changed := setFrozen(conds, &next, setConditionFields)
		require.True(t, changed)
		assert.False(t, got[1].LastTransitionTime.Time.Before(before), "transition time %v is not now", got[1].LastTransitionTime)
	})

	t.Run("nil removes the condition, and removing it again changes nothing", func(t *testing.T) {
		got, changed := setFrozen(conds, nil, setConditionFields)
		require.True(t, changed)
		assert.Equal(t, []v1alpha1.MachineSetCondition{available}, got)
		_, changed = setFrozen(got, nil, setConditionFields)
		assert.False(t, changed)
	})
}

func TestSetFrozenOnMachineDeploymentConditionsStampsLastUpdate(t *testing.T) {
	before := time.Now().Truncate(time.Second)
	c := &v1alpha1.MachineDeploymentCondition{Type: v1alpha1.MachineDeploymentFrozen, Status: v1alpha1.ConditionTrue,
		Reason: v1alpha1.MachineDeploymentStateSync, Message: "MachineSet a is frozen"}
	got, changed := setFrozen(nil, c, deploymentConditionFields)
	require.True(t, changed)
	require.Len(t, got, 1)
	assert.False(t, got[0].LastUpdateTime.Time.Before(before))
	assert.Equal(t, got[0].LastUpdateTime, got[0].LastTransitionTime)
}
