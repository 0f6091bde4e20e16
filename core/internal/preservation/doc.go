// Package preservation is what a Machine's preservation means, apart from
// the reconcile that carries it out (the Machine controller's preservation
// phase, machine_preserve.go): the preserve value in force for a machine,
// the Preserved condition of its Node (mirrored on the Machine), the
// preserved taint, and whether a Failed machine is preserved now. It
// follows MCM's manageMachinePreservation (machine-controller-manager,
// pkg/util/provider/machinecontroller/machine.go and machine_util.go):
//
//   - The value comes from the annotation node.machine.sapcloud.io/preserve
//     on the Node or on the Machine (Effective). The Node's wins while it
//     is set, or while the Machine records (last-applied-node-preserve-value)
//     that the Node's value was in force, so that removing it from the Node
//     stops.
//   - "now" preserves at once, in any phase; "when-failed" and the
//     MachineSet's "auto-preserved" only while the machine is Failed;
//     "false", an empty or removed value stop; any other value is not one
//     (Valid).
//   - A preserved machine's Node carries the Preserved condition
//     (Condition, SetCondition), and the Node of a preserved Failed machine
//     the NoSchedule taint node.machine.sapcloud.io/preserved (AddTaint):
//     a taint, not a cordon, so that a user's cordon is left alone.
//   - A preserved Failed machine whose Node is healthy again becomes Running
//     (ForRecovery tells the health check to look).
//
// The annotation keys, values, condition and taint names are user-facing
// and stay in core/api/v1alpha1.
package preservation
