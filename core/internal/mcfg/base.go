package mcfg

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// ControllerConfigKind is the kind that owns the template controller's
// MachineConfigs.
const ControllerConfigKind = "ControllerConfig"

// IsBase reports a MachineConfig that the generated ones build on: a
// user's own (no controller) or a template's (controlled by the
// ControllerConfig). Rendered MachineConfigs (controlled by a pool) and
// those generated from a KubeletConfig or ContainerRuntimeConfig are not.
func IsBase(mc *mcv1.MachineConfig) bool {
	ref := metav1.GetControllerOf(mc)
	return ref == nil || ref.Kind == ControllerConfigKind
}

// IsRendered tells the render controller's output from users' fragments: a
// rendered MachineConfig is controlled by a pool. The render controller
// leaves them out of what it merges; the collector deletes only them.
func IsRendered(mc *mcv1.MachineConfig) bool {
	ref := metav1.GetControllerOf(mc)
	return ref != nil && ref.Kind == "MachineConfigPool" && ref.APIVersion == mcv1.GroupVersion.String()
}
