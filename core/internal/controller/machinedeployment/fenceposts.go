package machinedeployment

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// Defaults for an unset maxSurge or maxUnavailable: add one machine at a
// time and never go below the desired count, the safe choice for machines,
// which take minutes to create.
var (
	defaultMaxSurge       = intstr.FromInt32(1)
	defaultMaxUnavailable = intstr.FromInt32(0)
)

// isRollingUpdate reports whether the deployment rolls gradually. An unset
// strategy type means RollingUpdate, the Kubernetes Deployment default.
func isRollingUpdate(d *v1alpha1.MachineDeployment) bool {
	t := d.Spec.Strategy.Type
	return t == v1alpha1.RollingUpdateMachineDeploymentStrategyType || t == ""
}

// rollingParameters returns the deployment's maxSurge and maxUnavailable with
// the defaults filled in.
func rollingParameters(d *v1alpha1.MachineDeployment) (surge, unavailable intstr.IntOrString) {
	surge, unavailable = defaultMaxSurge, defaultMaxUnavailable
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		if ru.MaxSurge != nil {
			surge = *ru.MaxSurge
		}
		if ru.MaxUnavailable != nil {
			unavailable = *ru.MaxUnavailable
		}
	}
	return surge, unavailable
}

// resolveFenceposts turns maxSurge and maxUnavailable into machine counts for
// desired replicas: a surge percentage rounds up, an unavailable percentage
// rounds down (so both err on the side of availability). When both come out
// as zero no rollout could make progress, so maxUnavailable becomes 1, as
// Kubernetes does.
func resolveFenceposts(surge, unavailable intstr.IntOrString, desired int32) (int32, int32, error) {
	s, err := intstr.GetScaledValueFromIntOrPercent(&surge, int(desired), true)
	if err != nil {
		return 0, 0, fmt.Errorf("maxSurge: %w", err)
	}
	u, err := intstr.GetScaledValueFromIntOrPercent(&unavailable, int(desired), false)
	if err != nil {
		return 0, 0, fmt.Errorf("maxUnavailable: %w", err)
	}
	if s < 0 || u < 0 {
		return 0, 0, fmt.Errorf("maxSurge and maxUnavailable must not be negative")
	}
	if s == 0 && u == 0 {
		u = 1
	}
	return int32(s), int32(u), nil
}

// validateStrategy reports a strategy the controller cannot act on.
func validateStrategy(d *v1alpha1.MachineDeployment) error {
	switch {
	case isRollingUpdate(d):
		surge, unavailable := rollingParameters(d)
		_, _, err := resolveFenceposts(surge, unavailable, d.Spec.Replicas)
		return err
	case d.Spec.Strategy.Type == v1alpha1.RecreateMachineDeploymentStrategyType:
		return nil
	default:
		return fmt.Errorf("strategy type %q is not supported (supported: RollingUpdate, Recreate)", d.Spec.Strategy.Type)
	}
}

// maxSurge is how many machines a rolling deployment may have above its
// replicas; zero for other strategies.
func maxSurge(d *v1alpha1.MachineDeployment) int32 {
	if !isRollingUpdate(d) {
		return 0
	}
	surge, unavailable := rollingParameters(d)
	s, _, _ := resolveFenceposts(surge, unavailable, d.Spec.Replicas)
	return s
}

// maxUnavailable is how many machines a rolling deployment may lack below its
// replicas, never more than the replicas; zero for other strategies.
func maxUnavailable(d *v1alpha1.MachineDeployment) int32 {
	if !isRollingUpdate(d) || d.Spec.Replicas == 0 {
		return 0
	}
	surge, unavailable := rollingParameters(d)
	_, u, _ := resolveFenceposts(surge, unavailable, d.Spec.Replicas)
	return min(u, d.Spec.Replicas)
}
