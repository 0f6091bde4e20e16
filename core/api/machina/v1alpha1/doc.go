// Package v1alpha1 holds the machina.io/v1alpha1 API types: machina's own
// kinds, which neither MCM nor OpenShift's MCO has. The Machine kinds stay
// in machine.sapcloud.io/v1alpha1 (core/api/v1alpha1) for MCM wire
// compatibility.
//
//   - MachineHealthCheck: remediates the Machines it selects whose Node is
//     unhealthy for too long, unless too many are (Cluster API's
//     MachineHealthCheck, docs/disruption.md).
//   - MachineDrainRule: tells the drain of the Machines it selects to
//     evict the pods it selects in an order, leave them, or wait for them
//     to complete (Cluster API's MachineDrainRule, docs/disruption.md).
//
// +kubebuilder:object:generate=true
// +groupName=machina.io
package v1alpha1
