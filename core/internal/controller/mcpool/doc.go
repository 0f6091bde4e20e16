// Package mcpool is the update controller of machine configuration pools
// (OpenShift's MachineConfigController node controller, docs/machine-config.md)
// and the drain controller of their handshake.
//
// The pool controller reconciles one MachineConfigPool at a time, in named
// phases (core/internal/controller/phase):
//
//   - members (members.go): the pool's Nodes, chosen by spec.nodeSelector or
//     by the MachineSet or MachineDeployment the pool names; a Node that two
//     pools choose is driven by neither and both pools say so;
//   - rollout (rollout.go): unless the pool is paused or a node is degraded,
//     gives as many nodes desiredConfig=<spec.configuration.name> as
//     maxUnavailable allows (the budget of core/internal/inplace), zone by
//     zone, oldest first; a Node born after its pool's configuration gets it
//     at once; a node degraded on a configuration the pool no longer targets
//     (the bad MachineConfig was fixed or reverted) is given the target, as
//     MCO does, within maxUnavailable;
//   - status (status.go): the machine counts and the conditions Updated,
//     Updating, NodeDegraded and Degraded, written once at the end, only
//     when they changed.
//
// The node agent answers on the Node's annotations (state, currentConfig,
// reason) and asks for a drain with desiredDrain; the drain controller
// (drain_controller.go) cordons and drains, or uncordons a Node that is
// Ready, and acknowledges with lastAppliedDrain.
//
// A Node that a MachineDeployment's in-place rollout has marked
// (candidate-for-update or selected-for-update) is not given a new
// configuration until the marks are gone; the MachineDeployment does not
// select a Node whose pool update is under way (inplace.ConfigUpdating). One
// Node is never driven by both.
package mcpool
