package overshoot

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// defaultMaxSurge is the maxSurge of a rolling deployment that does not
// set one; the MachineDeployment controller uses the same default.
var defaultMaxSurge = intstr.FromInt32(1)

// Thresholds are the machine counts at which a MachineSet is frozen
// (Higher) and unfrozen (Lower).
type Thresholds struct {
	Higher, Lower int32
}

// ComputeThresholds returns the thresholds of ms, owned by md (nil for a
// standalone set), for the given safetyUp and safetyDown.
func ComputeThresholds(ms *v1alpha1.MachineSet, md *v1alpha1.MachineDeployment, safetyUp, safetyDown int32) (Thresholds, error) {
	higher := 2*ms.Spec.Replicas + safetyUp
	if md != nil {
		surge, err := maxSurge(md)
		if err != nil {
			return Thresholds{}, err
		}
		higher = md.Spec.Replicas + surge + safetyUp
	}
	return Thresholds{Higher: higher, Lower: higher - safetyDown}, nil
}

// maxSurge is how many machines md may have above its replicas during an
// update, rounded up: its rollingUpdate (or inPlaceUpdate) maxSurge, and 0
// for Recreate.
func maxSurge(md *v1alpha1.MachineDeployment) (int32, error) {
	var cfg *v1alpha1.UpdateConfiguration
	switch md.Spec.Strategy.Type {
	case v1alpha1.RecreateMachineDeploymentStrategyType:
		return 0, nil
	case v1alpha1.InPlaceUpdateMachineDeploymentStrategyType:
		if u := md.Spec.Strategy.InPlaceUpdate; u != nil {
			cfg = &u.UpdateConfiguration
		}
	default: // RollingUpdate, also when unset
		if u := md.Spec.Strategy.RollingUpdate; u != nil {
			cfg = &u.UpdateConfiguration
		}
	}
	surge := defaultMaxSurge
	if cfg != nil && cfg.MaxSurge != nil {
		surge = *cfg.MaxSurge
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&surge, int(md.Spec.Replicas), true)
	if err != nil {
		return 0, fmt.Errorf("MachineDeployment %s: maxSurge: %w", md.Name, err)
	}
	return int32(n), nil
}
