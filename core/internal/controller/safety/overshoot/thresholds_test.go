package overshoot

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

func TestComputeThresholds(t *testing.T) {
	ms := func(replicas int32) *v1alpha1.MachineSet {
		return &v1alpha1.MachineSet{Spec: v1alpha1.MachineSetSpec{Replicas: replicas}}
	}
	md := func(replicas int32, strategy v1alpha1.MachineDeploymentStrategy) *v1alpha1.MachineDeployment {
		return &v1alpha1.MachineDeployment{Spec: v1alpha1.MachineDeploymentSpec{Replicas: replicas, Strategy: strategy}}
	}
	surge := func(v intstr.IntOrString) *intstr.IntOrString { return &v }
	rolling := func(s *intstr.IntOrString) v1alpha1.MachineDeploymentStrategy {
		return v1alpha1.MachineDeploymentStrategy{
			Type:          v1alpha1.RollingUpdateMachineDeploymentStrategyType,
			RollingUpdate: &v1alpha1.RollingUpdateMachineDeployment{UpdateConfiguration: v1alpha1.UpdateConfiguration{MaxSurge: s}},
		}
	}

	for _, tc := range []struct {
		name          string
		ms            *v1alpha1.MachineSet
		md            *v1alpha1.MachineDeployment
		up, down      int32
		higher, lower int32
	}{
		{"standalone set", ms(3), nil, 2, 1, 8, 7},
		{"standalone set of zero", ms(0), nil, 2, 1, 2, 1},
		// MCM's integration test: replicas 2, maxSurge 2, safetyUp 2 -> 6.
		{"deployment, maxSurge 2", ms(2), md(2, rolling(surge(intstr.FromInt32(2)))), 2, 1, 6, 5},
		{"deployment, the set's own replicas do not matter", ms(7), md(2, rolling(surge(intstr.FromInt32(2)))), 2, 1, 6, 5},
		{"deployment, maxSurge 25% of 10 rounds up to 3", ms(10), md(10, rolling(surge(intstr.FromString("25%")))), 2, 1, 15, 14},
		{"deployment, maxSurge unset defaults to 1", ms(4), md(4, rolling(nil)), 2, 1, 7, 6},
		{"deployment, strategy unset is rolling", ms(4), md(4, v1alpha1.MachineDeploymentStrategy{}), 2, 1, 7, 6},
		{"deployment, Recreate has no surge", ms(4), md(4, v1alpha1.MachineDeploymentStrategy{Type: v1alpha1.RecreateMachineDeploymentStrategyType}), 2, 1, 6, 5},
		{"deployment, in-place maxSurge", ms(4), md(4, v1alpha1.MachineDeploymentStrategy{
			Type:          v1alpha1.InPlaceUpdateMachineDeploymentStrategyType,
			InPlaceUpdate: &v1alpha1.InPlaceUpdateMachineDeployment{UpdateConfiguration: v1alpha1.UpdateConfiguration{MaxSurge: surge(intstr.FromInt32(3))}},
		}), 2, 1, 9, 8},
		{"larger safety margins", ms(3), nil, 5, 3, 11, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ComputeThresholds(tc.ms, tc.md, tc.up, tc.down)
			require.NoError(t, err)
			assert.Equal(t, Thresholds{Higher: tc.higher, Lower: tc.lower}, got)
		})
	}

	_, err := ComputeThresholds(ms(1), md(1, rolling(surge(intstr.FromString("many")))), 2, 1)
	assert.Error(t, err)
}
