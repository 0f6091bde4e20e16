// Package overshoot freezes MachineSets that have far more machines than
// they should (MCM's "overshooting" safety controller,
// gardener/machine-controller-manager pkg/controller/machine_safety.go).
//
// Some bug, or a fight between two controllers, can make a MachineSet
// create machines without end. Every --machine-safety-overshooting-period,
// and whenever one of its machines appears or goes, the controller counts a
// MachineSet's machines and compares the count with two thresholds:
//
//	higher = 2*ms.replicas + safetyUp                       (standalone set)
//	higher = md.replicas + maxSurge(md, rounded up) + safetyUp  (set of a deployment)
//	lower  = higher - safetyDown
//
// When the set's live machines (those not being deleted) number at least
// higher and more than the set accounts for, max(spec.replicas,
// status.replicas), the set gets the label freeze=True and the condition
// Frozen (reason OverShootingReplicaCount), its MachineDeployment too, and
// the event FrozeMachineSet; a frozen set creates no machines (the
// MachineSet controller honours the label) but may still delete. Unlike
// MCM, a scale-down never freezes: machines being deleted do not count, and
// machines the set's status still counts are no overshoot. The baseline is
// what the MachineSet controller stores in the set, not memory, so a new
// leader or a restarted manager judges a set as the old one did (see
// overshoots, docs/safety.md). A freeze is confirmed on fresh reads from
// the API server first.
// At count <= lower, machines being deleted included, the label and
// condition go and the event UnfrozeMachineSet is emitted. In between, the set stays as it is. The annotation
// safety.machine.sapcloud.io/unfreeze on a set (or on its deployment, for
// all its sets) lifts the freeze and is removed; a set that still overshoots
// is frozen again at once.
package overshoot
