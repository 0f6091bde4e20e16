// Package v1alpha1 holds the machine.sapcloud.io/v1alpha1 API types: Machine,
// MachineClass, MachineSet and MachineDeployment.
//
// The types are wire-compatible with Gardener's machine-controller-manager
// (MCM): every MCM field keeps its JSON name, so MCM manifests and MCM clients
// (kubectl habits, the cluster-autoscaler mcm provider) work unchanged. Fields
// that machina adds are marked "machina addition" in their comments; they are
// all optional, so an MCM client that does not know them loses nothing.
//
// +kubebuilder:object:generate=true
// +groupName=machine.sapcloud.io
package v1alpha1
