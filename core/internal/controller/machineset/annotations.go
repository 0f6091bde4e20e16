package machineset

import (
	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// withEffectiveCreationTimeout copies the set's annotation
// node.machine.sapcloud.io/effective-creation-timeout (which its
// MachineDeployment copied from its own) to the annotations of a new
// machine, where the Machine controller reads it as the machine's creation
// timeout. MCM's MachineSet controller does the same
// (machine-controller-manager pkg/controller, getMachinesAnnotationSet).
func withEffectiveCreationTimeout(ms *v1alpha1.MachineSet, annotations map[string]string) map[string]string {
	v, ok := ms.Annotations[v1alpha1.EffectiveCreationTimeoutAnnotation]
	if !ok {
		return annotations
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[v1alpha1.EffectiveCreationTimeoutAnnotation] = v
	return annotations
}
