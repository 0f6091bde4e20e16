// Package v1alpha1 holds the machine.sapcloud.io/v1alpha1 API types: Machine,
// MachineClass, MachineSet and MachineDeployment.
//
// The types are wire-compatible with Gardener's machine-controller-manager
// (MCM): every MCM field keeps its JSON name, so MCM manifests and MCM clients
// (kubectl habits, the cluster-autoscaler mcm provider) work unchanged.
//
// Machina adds these fields, all optional, so an MCM client that does not
// know them loses nothing:
//
//   - Machine status.deletionStep and status.deletionStepStartTime: the
//     persisted step of the deletion flow. MCM encodes the step in
//     lastOperation.description; machina reads it only from here.
//   - Machine status.unhealthySince: the start of the current unhealthy run,
//     from which the health timeout is measured.
//   - Machine status.machineConditions: machina's own conditions (for example
//     Drained) as metav1.Condition; status.conditions keeps mirroring the
//     Node's conditions as in MCM.
//   - MachineSet and MachineDeployment status.labelSelector: the selector as
//     a string, so that the /scale subresource reports it.
//
// The schema also checks what MCM only checked in its controllers (replica
// counts, enum values, duration syntax, a class name on every machine), so
// a bad object is refused when written instead of breaking later.
//
// +kubebuilder:object:generate=true
// +groupName=machine.sapcloud.io
package v1alpha1
