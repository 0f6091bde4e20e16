// Package v1 holds the machineconfiguration.openshift.io/v1 API types:
// MachineConfig, MachineConfigPool, KubeletConfig, ContainerRuntimeConfig and
// ControllerConfig (the fields machina's templates use), the subset of
// OpenShift's machine-config-operator (MCO) API that machina implements.
//
// The types are wire-compatible with that subset of
// github.com/openshift/api/machineconfiguration/v1 (vendored by
// openshift/machine-config-operator): every field keeps its JSON name, so a
// MachineConfig written for OpenShift (files, systemd units, kernel
// arguments) applies unchanged. spec.config of a MachineConfig is an Ignition
// object kept as raw JSON: fields machina does not know are stored as
// written (x-kubernetes-preserve-unknown-fields), not refused; ParseIgnition
// reads the subset machina acts on.
//
// Machina adds one field, optional, so an MCO client loses nothing:
//
//   - MachineConfigPool spec.machineOwnerRef: the pool's nodes are the nodes
//     of the machines of a MachineSet or MachineDeployment, instead of the
//     nodes nodeSelector selects.
//
// Fields of MCO's API that machina stores but does not act on
// (MachineConfigPool spec.pinnedImageSets and spec.osImageStream, refused at
// runtime with a condition naming them; status.certExpirys and
// status.poolSynchronizersStatus, never written) are described in
// docs/machine-config.md.
//
// +kubebuilder:object:generate=true
// +groupName=machineconfiguration.openshift.io
package v1
